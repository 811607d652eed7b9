"""The deploy/ recipes, validated without a cluster: YAML structure, commands, volumes, job scripts."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import ROOT

yaml = pytest.importorskip("yaml", reason="pyyaml is in the test extra")
DEPLOY = ROOT / "deploy"


def load(name: str):
    with open(DEPLOY / name) as fh:
        return yaml.safe_load(fh)


# -- docker compose ------------------------------------------------------------------------------------


def test_compose_services_commands_and_volumes():
    spec = load("docker-compose.yml")
    services = spec["services"]
    assert {"scheduler", "cpu-worker", "gpu-worker"} <= set(services)
    sched = services["scheduler"]["command"]
    assert sched[:2] == ["dask", "scheduler"]
    port = sched[sched.index("--port") + 1]
    address = f"tcp://scheduler:{port}"
    assert any(
        p.endswith(f":{port}:{port}") and p.startswith("127.0.0.1:") for p in services["scheduler"]["ports"]
    )
    cpu = services["cpu-worker"]
    assert cpu["command"][:3] == ["dask", "worker", address] and "scheduler" in cpu["depends_on"]
    gpu = services["gpu-worker"]
    assert gpu["profiles"] == ["gpu"], "GPU workers must be opt-in"
    assert gpu["command"][:4] == ["dask", "cuda", "worker", address]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert "[gpu]" in gpu["environment"]["EXTRA_PIP_PACKAGES"]
    declared = set(spec["volumes"])
    for name in ("scheduler", "cpu-worker", "gpu-worker", "client"):
        mounts = dict(v.split(":", 1) for v in services[name]["volumes"])
        assert mounts.get("cdfts-data") == "/data", name  # one shared store for all
        assert set(mounts) <= declared


# -- Kubernetes (dask-kubernetes operator) -------------------------------------------------------------


def _containers(pod_spec: dict) -> list[dict]:
    return pod_spec["containers"]


def _check_cluster_spec(spec: dict, name: str) -> None:
    worker = _containers(spec["worker"]["spec"])[0]
    scheduler = _containers(spec["scheduler"]["spec"])[0]
    assert spec["worker"]["replicas"] >= 1
    assert worker["args"][:2] == ["dask", "worker"] and scheduler["args"][:2] == ["dask", "scheduler"]
    ports = {p["name"]: p["containerPort"] for p in scheduler["ports"]}
    assert ports["tcp-comm"] == 8786
    service = spec["scheduler"]["service"]
    assert service["selector"] == {"dask.org/cluster-name": name, "dask.org/component": "scheduler"}
    assert {p["targetPort"] for p in service["ports"]} <= set(ports)
    mounts = {m["name"]: m["mountPath"] for m in worker["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["worker"]["spec"]["volumes"]}
    assert mounts["data"] == "/data" and volumes["data"]["persistentVolumeClaim"]["claimName"] == "cdfts-data"


def test_k8s_daskcluster_manifest():
    doc = load("k8s/daskcluster.yaml")
    assert doc["apiVersion"] == "kubernetes.dask.org/v1" and doc["kind"] == "DaskCluster"
    _check_cluster_spec(doc["spec"], doc["metadata"]["name"])


def test_k8s_daskjob_manifest_runs_cdfts_with_resume():
    doc = load("k8s/daskjob.yaml")
    assert doc["apiVersion"] == "kubernetes.dask.org/v1" and doc["kind"] == "DaskJob"
    job = doc["spec"]["job"]["spec"]
    assert job["restartPolicy"] == "Never"
    script = " ".join(_containers(job)[0]["args"])
    for needle in ("cdfts transform", "$DASK_SCHEDULER_ADDRESS", "--checkpoint /data/run.zarr", "--resume"):
        assert needle in script
    assert {m["mountPath"] for m in _containers(job)[0]["volumeMounts"]} == {"/data"}
    _check_cluster_spec(doc["spec"]["cluster"]["spec"], doc["metadata"]["name"])


# -- HPC (dask-jobqueue) ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hpc():
    pytest.importorskip(
        "dask_jobqueue", reason="dask-jobqueue is in the test extra; install it to check job scripts"
    )
    spec = importlib.util.spec_from_file_location("cdfts_deploy_hpc", DEPLOY / "hpc.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


LOCAL_ONLY = {"scheduler_options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}}


@pytest.mark.parametrize(
    "system, directives",
    [
        (
            "slurm",
            ["#SBATCH -p compute", "#SBATCH -A proj42", "#SBATCH --cpus-per-task=1", "#SBATCH -t 02:00:00"],
        ),
        (
            "pbs",
            [
                "#PBS -q compute",
                "#PBS -A proj42",
                "#PBS -l select=1:ncpus=1:mem=",
                "#PBS -l walltime=02:00:00",
            ],
        ),
    ],
)
def test_hpc_job_script(hpc, system, directives):
    cluster = hpc.make_cluster(system, queue="compute", account="proj42", **LOCAL_ONLY)
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    for line in directives:
        assert line in script, script
    worker = [ln for ln in script.splitlines() if "dask_worker" in ln or "dask worker" in ln]
    assert len(worker) == 1 and "tcp://127.0.0.1:" in worker[0]
    assert "--nthreads 1" in worker[0] and "--memory-limit 4.00GiB" in worker[0]


def test_hpc_rejects_unknown_system(hpc):
    with pytest.raises(ValueError, match="slurm"):
        hpc.make_cluster("lsf")
