"""The deploy/ recipes, validated without a cluster: images built from this checkout (Dockerfiles parsed,
not built: this machine has a Docker client but no engine), YAML structure, commands, volumes, the
Kubernetes manifests against the dask-kubernetes operator's CRD schemas, job scripts; and the wheel a
user would build from the checkout, installed in a fresh virtual environment.
(deploy/hpc.py on a real SLURM: tests/test_deploy_slurm.py.)"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, ROOT

yaml = pytest.importorskip("yaml", reason="pyyaml is in the test extra")
DEPLOY = ROOT / "deploy"


def load(name: str):
    with open(DEPLOY / name) as fh:
        return yaml.safe_load(fh)


# -- docker compose ------------------------------------------------------------------------------------


def test_every_compose_command_in_the_docs_names_the_compose_file():
    """Regression: one ``docker compose up`` in deploy/README.md had no ``-f deploy/docker-compose.yml``;
    run from the repository root (where the others run) it finds no compose project."""
    text = "\n".join(doc.read_text() for doc in (DEPLOY / "README.md", ROOT / "README.md"))
    commands = re.findall(r"docker compose\b[^`\n]*", text)
    assert len(commands) >= 5
    assert [c for c in commands if not c.startswith("docker compose -f deploy/docker-compose.yml ")] == []


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
    images = {"scheduler": "Dockerfile", "cpu-worker": "Dockerfile", "client": "Dockerfile",
              "gpu-worker": "Dockerfile.gpu"}  # fmt: skip
    for name, dockerfile in images.items():
        build = services[name]["build"]  # built from this checkout, tagged with the service's image name
        assert (DEPLOY / build["context"]).resolve() == ROOT, name
        assert build["dockerfile"] == f"deploy/{dockerfile}", name
        assert services[name]["image"].startswith("${"), name  # the tag to build and push is a parameter
    declared = set(spec["volumes"])
    for name in ("scheduler", "cpu-worker", "gpu-worker", "client"):
        mounts = dict(v.split(":", 1) for v in services[name]["volumes"])
        assert mounts.get("cdfts-data") == "/data", name  # one shared store for all
        assert set(mounts) <= declared


def test_no_recipe_installs_the_package_by_name():
    """cdfts-dask is not on any package index: every recipe installs it from this checkout."""
    requirement = re.compile(r"cdfts[-_]dask(\[[^]]*\])?([=<>~!].*)?")
    for path in DEPLOY.rglob("*"):
        if not path.is_file() or path.suffix in (".md", ".pyc") or "__pycache__" in path.parts:
            continue  # bytecode: Python writes deploy/__pycache__ when a test imports deploy/hpc.py
        text = path.read_text()
        assert "EXTRA_PIP_PACKAGES" not in text, path
        for line in re.findall(r"pip install (.*)", text):
            names = [word.strip("\"'") for word in line.split()]
            assert not any(requirement.fullmatch(name) for name in names), (path, line)


# -- Dockerfiles -------------------------------------------------------------------------------------------


def dockerfile(name: str):
    parse = pytest.importorskip("dockerfile_parse", reason="dockerfile-parse is in the test extra")
    with open(DEPLOY / name, "rb") as fh:
        return parse.DockerfileParser(fileobj=fh, env_replace=False).structure


def copied(structure) -> list[tuple[list[str], str]]:
    """The COPY instructions as (sources relative to the build context, destination)."""
    copies = [ins["value"].split() for ins in structure if ins["instruction"] == "COPY"]
    return [(args[:-1], args[-1]) for args in copies]


def copy_build_context(name: str, dest: Path) -> Path:
    """What the Dockerfile ``name`` copies out of this checkout (the build context), placed under ``dest``
    as the image would have it; returns the directory its ``pip install`` installs."""
    structure = dockerfile(name)
    for sources, target in copied(structure):
        for source in sources:
            to = dest / target.lstrip("/")
            if not target.endswith("/"):  # COPY dir target: the directory's contents become target
                shutil.copytree(ROOT / source, to)
            else:
                to.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, to)
    return dest / copied(structure)[0][1].lstrip("/")


@pytest.mark.parametrize(
    "name, base, extra",
    [("Dockerfile", "ghcr.io/dask/dask:", ""), ("Dockerfile.gpu", "nvidia/cuda:", "[gpu]")],
)
def test_dockerfile_installs_this_checkout(name, base, extra):
    structure = dockerfile(name)
    args = [ins["value"] for ins in structure if ins["instruction"] == "ARG"]
    assert any(a.startswith(f"BASE_IMAGE={base}") for a in args)
    assert [ins["value"] for ins in structure if ins["instruction"] == "FROM"] == ["${BASE_IMAGE}"]
    copies = copied(structure)
    sources = {src for srcs, _ in copies for src in srcs}
    assert sources == {"pyproject.toml", "README.md", "cdfts_dask"}  # what the package build reads
    assert all((ROOT / src).exists() for src in sources)  # relative to the build context (repo root)
    target = copies[0][1].rstrip("/")
    assert {dst.rstrip("/") for _, dst in copies} == {target, f"{target}/cdfts_dask"}
    runs = " ".join(ins["value"] for ins in structure if ins["instruction"] == "RUN")
    install = re.search(r"pip install --no-cache-dir (\S+)", runs)
    assert install and install.group(1).strip('"') == f"{target}{extra}", runs
    assert "cdfts --version" in runs  # the build fails if the console script does not run


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
    doc = load("k8s/cluster/daskcluster.yaml")
    assert doc["apiVersion"] == "kubernetes.dask.org/v1" and doc["kind"] == "DaskCluster"
    _check_cluster_spec(doc["spec"], doc["metadata"]["name"])


def test_k8s_daskjob_manifest_runs_cdfts_with_resume():
    doc = load("k8s/job/daskjob.yaml")
    assert doc["apiVersion"] == "kubernetes.dask.org/v1" and doc["kind"] == "DaskJob"
    job = doc["spec"]["job"]["spec"]
    assert job["restartPolicy"] == "Never"
    script = " ".join(_containers(job)[0]["args"])
    for needle in ("cdfts transform", "$DASK_SCHEDULER_ADDRESS", "--checkpoint /data/run.zarr", "--resume"):
        assert needle in script
    assert {m["mountPath"] for m in _containers(job)[0]["volumeMounts"]} == {"/data"}
    _check_cluster_spec(doc["spec"]["cluster"]["spec"], doc["metadata"]["name"])


def _images(node) -> list[str]:
    if isinstance(node, dict):
        own = [node["image"]] if "image" in node else []
        return own + [i for v in node.values() for i in _images(v)]
    return [i for v in node for i in _images(v)] if isinstance(node, list) else []


@pytest.mark.parametrize("kind, manifest", [("cluster", "daskcluster.yaml"), ("job", "daskjob.yaml")])
def test_k8s_image_is_a_kustomize_parameter(kind, manifest):
    """kubectl apply -k deploy/k8s/KIND: the kustomization's ``images`` entry replaces every container's
    image (kustomize's image transformer rewrites ``containers[].image`` at any depth, custom resources
    included)."""
    kustomization = load(f"k8s/{kind}/kustomization.yaml")
    assert kustomization["kind"] == "Kustomization" and kustomization["resources"] == [manifest]
    (image,) = kustomization["images"]
    assert image["newName"] and image["newTag"]
    images = _images(load(f"k8s/{kind}/{manifest}"))
    assert images and {i.split(":")[0] for i in images} == {image["name"]}


def _strict(schema):
    """The CRD schema with unknown fields rejected (as ``kubectl apply --validate=strict`` does) wherever it
    lists its properties and does not preserve unknown fields."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        if not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


@pytest.mark.slow
@pytest.mark.parametrize("path", ["k8s/cluster/daskcluster.yaml", "k8s/job/daskjob.yaml"])
def test_k8s_manifest_matches_the_operator_crd(path):
    """Each manifest against the CustomResourceDefinition dask-kubernetes ships (its Helm chart's crds/)."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extra")
    pytest.importorskip("dask_kubernetes", reason="dask-kubernetes is in the test extra (its CRD schemas)")
    from importlib.resources import files

    doc = load(path)
    crd_file = f"{doc['kind'].lower()}.yaml"
    crds = files("dask_kubernetes") / "operator/deployment/helm/dask-kubernetes-operator/crds"
    crd = yaml.safe_load((crds / crd_file).read_text())
    group, version = doc["apiVersion"].split("/")
    assert crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == doc["kind"]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    schema = _strict(served["schema"]["openAPIV3Schema"])
    body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata")}
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft4Validator(schema).iter_errors(body)]  # fmt: skip
    assert errors == []
    # the checker rejects what the operator would: a misspelt field, a wrong type
    bad = {**body, "spec": {**body["spec"], "replicas": 2}}
    assert not jsonschema.Draft4Validator(schema).is_valid(bad)


# -- the wheel built from this checkout -----------------------------------------------------------------


@pytest.mark.slow
def test_wheel_from_the_image_sources_installs_and_runs_cdfts_transform(tmp_path):
    """``python -m build`` on exactly the files the Dockerfile copies, then ``pip install`` of the wheel in a
    fresh virtual environment (dependencies from the package index), then ``cdfts transform`` outside the
    checkout equals the in-tree run."""
    pytest.importorskip("build", reason="build is in the test extra")
    from cdfts_dask import cdf_ts

    source = copy_build_context("Dockerfile", tmp_path / "context")
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(source)],
                   check=True, capture_output=True)  # fmt: skip
    (wheel,) = dist.glob("cdfts_dask-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
                   check=True, capture_output=True, env=clean)  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(DATA / "3L.csv", work / "in.csv")
    command = [str(bin_dir / "cdfts"), "transform", "in.csv", "out.csv", "--label", "label", "--quiet"]
    done = subprocess.run(command, cwd=work, env=clean, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where = subprocess.run([str(bin_dir / "python"), "-c", "import cdfts_dask; print(cdfts_dask.__file__)"],
                           cwd=work, env=clean, capture_output=True, text=True, check=True)  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(env_dir)  # the installed wheel ran, not the checkout
    table = np.loadtxt(DATA / "3L.csv", delimiter=",", skiprows=1)
    written = np.loadtxt(work / "out.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(written[:, :-1], cdf_ts(table[:, :-1]), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(written[:, -1], table[:, -1])


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


def test_hpc_defaults_to_loopback(hpc):
    """Single node by default: scheduler, its dashboard and the workers (and theirs) on 127.0.0.1."""
    cluster = hpc.make_cluster("slurm")
    try:
        address, dashboard, script = cluster.scheduler_address, cluster.dashboard_link, cluster.job_script()
        replicas_kept = not cluster.scheduler.extensions["amm"].running  # a lost job leaves the input
    finally:
        cluster.close()
    assert replicas_kept
    assert address.startswith("tcp://127.0.0.1:") and dashboard.startswith("http://127.0.0.1:")
    worker = next(ln for ln in script.splitlines() if "dask_worker" in ln)
    assert "--interface lo" in worker and "--dashboard-address 127.0.0.1:0" in worker
    assert worker.split()[0] == sys.executable  # the nodes run this interpreter unless --python says


def test_hpc_scheduler_host_and_install_source(hpc):
    options = hpc.build_hpc_parser().parse_args(
        ["pbs", "--scheduler-host", "127.0.0.1", "--python", "/shared/venv/bin/python",
         "--prologue", "module load python", "--memory", "2GiB"]
    )  # fmt: skip
    cluster = hpc._cluster(options)
    try:
        address, script = cluster.scheduler_address, cluster.job_script()
    finally:
        cluster.close()
    assert address.startswith("tcp://127.0.0.1:")
    worker = next(ln for ln in script.splitlines() if "dask_worker" in ln)
    assert worker.startswith("/shared/venv/bin/python -m distributed.cli.dask_worker tcp://127.0.0.1:")
    assert "--interface" not in worker and "--memory-limit 2.00GiB" in worker
    assert script.index("module load python") < script.index(worker)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.npy", "out.npy"], "input: file not found"),
        ([str(DATA / "syn.csv"), "out.txt"], "output: unsupported file type '.txt'"),
        # Regression: a .py input was refused only once the jobs had been queued and waited for
        ([__file__, "out.npy"], "input: unsupported file type '.py'"),
        (["in.npy", "out.npy", "--workers", "2"], "--workers is not for hpc.py"),
        (["in.npy", "out.npy", "--jobs", "0"], "--jobs must be at least 1"),
        (["in.npy", "out.npy", "--bogus"], "unrecognized arguments: --bogus"),
        (["in.npy", "out.npy", "--wait", "soon"], "--wait must be a positive duration such as '30 minutes'"),
        (["in.npy", "out.npy", "--wait", "0"], "--wait must be a positive duration"),
        # Regression: parse_timedelta's OverflowError (1e400) and KeyError (nan) escaped as tracebacks
        (["in.npy", "out.npy", "--wait", "1e400"], "--wait must be a positive duration such as '30 minutes', "
         "got '1e400'"),
        (["in.npy", "out.npy", "--wait", "nan"], "--wait must be a positive duration"),
        (["--print-job-script", "--interface", "nosuchif0"], "hpc.py slurm: error: 'nosuchif0' is not"),
    ],
)
def test_hpc_errors_are_one_line_before_any_job(hpc, capsys, argv, message):
    """The CLI's own checks, and their one-line errors (exit status 2), run before a job is queued."""
    try:
        status = hpc.main(["slurm", *argv])
    except SystemExit as exc:  # argument errors exit from the parser
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_hpc_wait_stops_when_the_jobs_workers_do_not_all_come(hpc, monkeypatch, capsys, tmp_path):
    """Regression: ``hpc.py`` waited for its jobs' workers without a limit, so a job that never started
    (or whose worker exited at start) kept it waiting forever.  ``--wait`` bounds that: here a cluster
    whose batch queue never starts a job (a scheduler without workers stands in for it)."""
    monkeypatch.setattr(hpc, "_cluster", _queue_starting(0))
    np.save(tmp_path / "in.npy", np.random.default_rng(0).random((20, 2)))
    status = hpc.main(["slurm", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--jobs", "2",
                       "--wait", "1s", "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert err.startswith("hpc.py slurm: error: --wait: 0 of the 2 jobs' workers connected within 1s; "), err
    assert not (tmp_path / "out.npy").exists()


def test_hpc_tls_on_tls_dir_and_walltime_reach_the_cluster(hpc, tmp_path):
    """Found by a mutation audit (2026-12-07): ``--tls on`` read as ``auto`` (plain TCP on loopback),
    ``--tls`` or ``--walltime`` dropped on their way to dask-jobqueue, and ``--tls-dir`` replaced by the
    current directory passed every test here (only the real-SLURM tests, skipped without SLURM, ran
    ``--tls on``): the workers' certificate and key go to the folder the jobs share."""
    options = hpc.build_hpc_parser().parse_args(
        ["slurm", "--tls", "on", "--tls-dir", str(tmp_path), "--walltime", "00:10:00"]
    )
    cluster = hpc._cluster(options)
    try:
        address, script = cluster.scheduler_address, cluster.job_script()
        written = sorted(p.name for p in tmp_path.iterdir())
    finally:
        cluster.close()
    assert address.startswith("tls://127.0.0.1:")
    assert "#SBATCH -t 00:10:00" in script
    worker = next(ln for ln in script.splitlines() if "dask_worker" in ln)
    assert f"--tls-key {tmp_path}/.dask-jobqueue.worker.key." in worker, worker
    assert len(written) == 3 and all(name.startswith(".dask-jobqueue.worker.") for name in written), written


def _queue_starting(workers: int) -> type:
    """A dask-jobqueue cluster class (for ``hpc._cluster``) whose batch queue starts ``workers`` jobs'
    workers, however many were asked for: an in-process cluster with a real scheduler."""
    from distributed import LocalCluster

    class Jobs:
        def __init__(self, options):
            options = dict(threads_per_worker=1, processes=False, dashboard_address=":0")  # any free port
            self.cluster = LocalCluster(n_workers=workers, **options)
            self.scheduler_address = self.cluster.scheduler_address
            self.security = self.cluster.security  # plain TCP
            self.wait_for_workers = self.cluster.wait_for_workers

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.cluster.close()

        @property
        def scheduler_info(self):
            return self.cluster.scheduler_info

        def scale(self, jobs):
            pass

    return Jobs


def test_hpc_runs_on_the_jobs_workers_once_all_of_them_connected(hpc, monkeypatch, capsys, tmp_path):
    """Found by a mutation audit (2026-12-07): waiting for the first job's worker only passed every test
    here (only the real-SLURM tests, skipped without SLURM, ran a job): with 2 jobs of which 1 worker
    came, ``--wait`` stops the run, saying how many came.  The run's tasks run on the jobs' scheduler,
    not on an embedded cluster (a result equal either way: checked on the scheduler)."""
    jobs = _queue_starting(1)
    monkeypatch.setattr(hpc, "_cluster", jobs)
    X = np.random.default_rng(0).random((30, 2))
    np.save(tmp_path / "in.npy", X)
    ran = []
    real = jobs.__exit__
    monkeypatch.setattr(jobs, "__exit__", lambda self, *exc: ran.append(
        self.cluster.scheduler.transition_counter) or real(self, *exc))  # fmt: skip
    argv = ["slurm", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--max-iter", "1", "--quiet",
            "--method", "tiled", "--wait", "60s"]  # fmt: skip
    assert hpc.main([*argv, "--jobs", "1"]) == 0, capsys.readouterr().err
    import cdfts_dask

    expected = cdfts_dask.cdf_ts(X, max_iter=1, method="dense")
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, rtol=0, atol=1e-9)
    assert ran[0] > 0  # the run's tasks ran on the jobs' scheduler
    (tmp_path / "out.npy").unlink()
    status = hpc.main([*argv[:-1], "1s", "--jobs", "2"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("hpc.py slurm: error: --wait: 1 of the 2 jobs' workers "), err
    assert not (tmp_path / "out.npy").exists()
