"""The project's metadata agrees with itself: one Python floor in pyproject, ruff, README and CI; the GPU
figures script cannot pass for a GPU run where the GPU was not used; the random-configurations check runs;
the package has no import cycle and no function that it never uses."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib

import pytest
from conftest import HAS_GPU, ROOT, cli_env


def _floor() -> tuple[int, int]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    match = re.fullmatch(r">=\s*(\d+)\.(\d+)", meta["project"]["requires-python"])
    assert match, meta["project"]["requires-python"]
    return int(match[1]), int(match[2])


def test_python_floor_agrees_everywhere():
    major, minor = _floor()
    assert (major, minor) >= (3, 11)  # Zarr 3 needs Python 3.11
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["tool"]["ruff"]["target-version"] == f"py{major}{minor}"
    assert f"Python >= {major}.{minor}" in (ROOT / "README.md").read_text()
    assert f"sys.version_info < ({major}, {minor})" in (ROOT / ".ci" / "run").read_text()
    assert sys.version_info[:2] >= (major, minor)


def test_the_package_imports_its_heavy_dependencies_on_first_use():
    """``import cdfts_dask`` (the ``cdfts`` command, every Dask worker unpickling an engine task body) loads
    neither scikit-learn, Zarr nor dask.array; each public name still resolves, to the one object."""
    code = (
        "import sys, cdfts_dask, cdfts_dask.engine.cpu\n"
        "heavy = [m for m in ('sklearn', 'zarr', 'dask.array', 'pandas') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env())
    assert res.returncode == 0, res.stderr
    import cdfts_dask
    from cdfts_dask import CDFTS, cdf_ts
    from cdfts_dask.estimator import CDFTS as defined

    assert CDFTS is defined and cdf_ts.__module__ == "cdfts_dask.api"
    assert all(getattr(cdfts_dask, name) is not None for name in cdfts_dask.__all__)

    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        cdfts_dask.nope  # noqa: B018


@pytest.mark.slow
def test_a_hung_test_ends_the_run_with_its_stacks_under_the_projects_timeout(tmp_path):
    """pyproject's pytest ``timeout`` (pytest-timeout, method "thread"): a test stuck where SIGALRM would
    only move the wait (a pool's result, then its join on the way out) ends the run, naming the test and
    the line it waits on, instead of hanging until CI's limit.  The limit is lowered to 2 s here."""
    (tmp_path / "test_hangs.py").write_text(
        "import concurrent.futures, threading\n"
        "def test_waits_forever():\n"
        "    never = threading.Event()\n"
        "    with concurrent.futures.ThreadPoolExecutor(1) as pool:\n"
        "        pool.submit(never.wait).result()  # the wait\n"
    )
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=2",
               "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), "test_hangs.py"]
    res = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60, env=cli_env())
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "Timeout" in out and "test_waits_forever" in out and "# the wait" in out, out


def _gpu_figures(tmp_path, *stages, kit=None, python=sys.executable, **env):
    """``bash docs/scripts/gpu_figures.sh STAGES`` in the repository, its logs under tmp_path/figures, no kit
    unless ``kit`` (a folder), PYTHON ``python``, and ``env`` on top of the command line's environment."""
    env = cli_env() | {"OUT": str(tmp_path / "figures"), "KIT": str(kit or tmp_path / "no-kit"),
                       "SITE": str(tmp_path / "site"), "PYTHON": str(python)} | env  # fmt: skip
    script = ["bash", "docs/scripts/gpu_figures.sh", *stages]
    return subprocess.run(script, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(HAS_GPU, reason="on a GPU host the GPU tests run for real and the stage passes")
def test_gpu_figures_fails_when_the_gpu_tests_skip(tmp_path):
    """docs/scripts/gpu_figures.sh's ``tests`` stage: without a usable GPU every ``gpu`` test skips, and
    the stage (and the script's exit status) says so instead of reporting a pass."""
    res = _gpu_figures(tmp_path, "tests")
    assert res.returncode == 1, res.stdout + res.stderr  # one failed stage
    log = (tmp_path / "figures" / "tests.log").read_text()
    assert re.search(r"\d+ skipped", log) and "this was not a real-GPU run" in log
    assert "== tests: exit 1" in log


def test_gpu_figures_stops_a_stage_at_its_limit_and_goes_on(tmp_path):
    """A hung stage must not take the lent machine's whole command: each stage runs under a time limit
    (STAGE_LIMIT_S here, 1 s: less than pytest takes to start), fails alone, and the next stage runs."""
    res = _gpu_figures(tmp_path, "tests", "tests", STAGE_LIMIT_S="1")
    assert res.returncode == 2, res.stdout + res.stderr  # both stages failed, the second one ran
    log = (tmp_path / "figures" / "tests.log").read_text()
    assert "gpu_figures: stopped after its limit of 1 s: " in log and "== tests: exit 124" in log, log
    assert res.stdout.count("== tests (") == 2
    # timeout would take "5m"; the header says whole seconds
    res = _gpu_figures(tmp_path, "tests", STAGE_LIMIT_S="5m")
    assert res.returncode == 98 and "STAGE_LIMIT_S must be a whole number of seconds, got '5m'" in res.stderr


def _gpu_figures_with_a_stand_in_python(tmp_path, kit, *stages):
    """gpu_figures.sh run with PYTHON a stand-in that prints ``ran``, the first PYTHONPATH entry (the
    package it would import) and its arguments: which commands a stage runs, with no GPU."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho "ran ${PYTHONPATH%%:*} $*"\n')
    fake.chmod(0o755)
    res = _gpu_figures(tmp_path, *stages, kit=kit, python=fake)
    return res, [line.split(maxsplit=2)[1:] for line in res.stdout.splitlines() if line.startswith("ran ")]


def test_gpu_figures_ab_stage_times_each_exported_revision_between_two_runs_of_this_tree(tmp_path):
    """The ``ab`` stage runs the kernel profile with this tree's package, then with each revision's
    exported under KIT/ab/NAME/cdfts_dask (first on PYTHONPATH, so it is the one imported), then with this
    tree again; with nothing exported it fails and says how to export one."""
    kit = tmp_path / "kit"
    for name in ("r1", "r2"):
        (kit / "ab" / name / "cdfts_dask").mkdir(parents=True)
    res, ran = _gpu_figures_with_a_stand_in_python(tmp_path, kit, "ab")
    assert res.returncode == 0, res.stdout + res.stderr
    revisions = [str(kit / "ab" / name) for name in ("r1", "r2")]
    assert [package for package, _ in ran] == [str(ROOT), *revisions, str(ROOT)], res.stdout
    profile = "docs/scripts/cuda_kernel_profile.py --n 2e5 -d 8 --dtype float64,float32"
    assert {args for _, args in ran} == {profile}
    res, ran = _gpu_figures_with_a_stand_in_python(tmp_path, tmp_path / "no-kit", "ab")
    assert res.returncode == 1 and not ran and "no revision to compare under" in res.stdout + res.stderr


def test_gpu_figures_ab_stage_also_benches_each_revision_at_ab_sizes(tmp_path, monkeypatch):
    """With AB_SIZES set, the ``ab`` stage follows each revision's kernel profile with one float32
    iteration of ``cdfts bench --gpu`` at those sizes on one GPU, with the same package first on
    PYTHONPATH (the target's figure per revision, in one call)."""
    kit = tmp_path / "kit"
    (kit / "ab" / "r1" / "cdfts_dask").mkdir(parents=True)
    monkeypatch.setenv("AB_SIZES", "1e6")
    res, ran = _gpu_figures_with_a_stand_in_python(tmp_path, kit, "ab")
    assert res.returncode == 0, res.stdout + res.stderr
    profile = "docs/scripts/cuda_kernel_profile.py --n 2e5 -d 8 --dtype float64,float32"
    bench = "-m cdfts_dask bench --gpu --sizes 1e6 -d 8 --dtype float32 --workers 1 --oracle-max 0 --repeat 1"
    roots = [str(ROOT), str(kit / "ab" / "r1"), str(ROOT)]
    assert ran == [[root, args] for root in roots for args in (profile, bench)], res.stdout


def test_gpu_ab_kit_exports_each_candidate_series_applied_to_head(tmp_path):
    """docs/scripts/gpu_ab_kit.sh, in a clone of this repository: with no candidate given it applies the
    patches of every docs/candidates/*.series, in order, to the committed tree and exports the package to
    KIT/ab/NAME/cdfts_dask (the ab folder emptied first), where the ab stage looks; a revision given is
    exported as committed; a patch that does not apply, or no series at all, fails and says so."""
    repo, kit = tmp_path / "repo", tmp_path / "kit"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True, capture_output=True)
    git = ["git", "-C", str(repo)]
    module = repo / "cdfts_dask" / "engine" / "cuda_kernels.py"
    committed = module.read_text()
    candidates = repo / "docs" / "candidates"
    candidates.mkdir(parents=True, exist_ok=True)
    for old in [*candidates.glob("*.patch"), *candidates.glob("*.series")]:
        old.unlink()

    def patch(before: str, after: str, name: str) -> None:
        """A patch in docs/candidates that takes the module from ``before`` to ``after``."""
        module.write_text(before)
        subprocess.run([*git, "add", str(module)], check=True)
        module.write_text(after)
        diff = subprocess.run([*git, "diff", "--", str(module)], capture_output=True, text=True, check=True)
        (candidates / name).write_text(diff.stdout)
        module.write_text(committed)
        subprocess.run([*git, "reset", "-q"], check=True)

    one = committed + "# the candidate's change\n"
    two = one + "# its variant\n"
    patch(committed, one, "faster.patch")
    patch(one, two, "variant.patch")  # a variant: one more patch on top of the one it varies
    (candidates / "faster.series").write_text("faster.patch\n")
    (candidates / "faster-variant.series").write_text("faster.patch\nvariant.patch\n")
    (kit / "ab" / "stale" / "cdfts_dask").mkdir(parents=True)
    env = {**cli_env(), "KIT": str(kit)}

    def export(*candidates: str) -> subprocess.CompletedProcess:
        script = str(ROOT / "docs" / "scripts" / "gpu_ab_kit.sh")
        return subprocess.run(["bash", script, *candidates], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=60)  # fmt: skip

    def exported(name: str) -> str:
        return (kit / "ab" / name / module.relative_to(repo)).read_text()

    res = export()
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(p.name for p in (kit / "ab").iterdir()) == ["faster", "faster-variant"]
    assert exported("faster") == one and exported("faster-variant") == two
    subprocess.run([*git, "branch", "cand/as-committed"], check=True)
    res = export("cand/as-committed")
    assert res.returncode == 0, res.stdout + res.stderr
    assert [p.name for p in (kit / "ab").iterdir()] == ["as-committed"]
    assert exported("as-committed") == committed
    subprocess.run([*git, "rm", "-q", "cdfts_dask/engine/cuda_kernels.py"], check=True)
    subprocess.run([*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "gone"], check=True)
    res = export()
    assert res.returncode == 1 and "faster.patch does not apply to HEAD" in res.stderr, res.stderr
    for series in candidates.glob("*.series"):
        series.unlink()
    res = export()
    assert res.returncode == 1 and "no series under docs/candidates/" in res.stderr


def test_every_kernel_candidate_still_applies_to_this_tree(tmp_path):
    """The kernel candidates waiting for a GPU (docs/candidates) apply to the package and tests as they
    are now, committed or not (the kit's BASE is ``git stash create``'s commit of the working tree, which
    touches neither the tree nor the stash list), each series in its order: a change to main that breaks
    one fails here, not on the GPU host; every patch there is in some series."""
    folder = ROOT / "docs" / "candidates"
    series = sorted(folder.glob("*.series"))
    tree = subprocess.run(["git", "stash", "create"], cwd=ROOT, capture_output=True, text=True, check=True)
    script = str(ROOT / "docs" / "scripts" / "gpu_ab_kit.sh")
    env = {**cli_env(), "KIT": str(tmp_path), "BASE": tree.stdout.strip() or "HEAD"}
    res = subprocess.run(["bash", script], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (tmp_path / "ab").iterdir()) == sorted(s.stem for s in series)
    listed = {line for s in series for line in s.read_text().split()}
    assert listed == {p.name for p in folder.glob("*.patch")}


def test_gpu_figures_knn_stage_benches_one_gpu_with_the_knn_estimator(tmp_path):
    """The ``knn`` stage (in the default stages) runs the one-GPU bench of the ``bench`` stage with the k-NN
    estimator, k = 10, at the same sizes."""
    res, ran = _gpu_figures_with_a_stand_in_python(tmp_path, tmp_path / "no-kit", "knn")
    assert res.returncode == 0, res.stdout + res.stderr
    assert [args for _, args in ran] == [
        "-m cdfts_dask bench --gpu --sizes 1e5,1e6 -d 8 --dtype float64,float32 --workers 1 --estimator knn "
        "-k 10 --oracle-max 0 --repeat 2"
    ]


def test_random_configurations_check_runs_and_finds_nothing():
    """docs/scripts/random_configs_check.py (the wider random net over the engine, the simulated CUDA
    bodies and the model): its quickest mode, for two seconds, checks some cases and finds no mismatch."""
    script = ["docs/scripts/random_configs_check.py", "cuda-sim", "--seconds", "2", "--seed", "3"]
    res = subprocess.run([sys.executable, *script], cwd=ROOT, env=cli_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    last = res.stdout.splitlines()[-1]
    summary = re.fullmatch(r"cuda-sim: (\d+) cases, 0 mismatches or errors; .*", last)
    assert summary and int(summary[1]) >= 1, res.stdout


def _package_modules() -> dict[str, object]:
    """Every module of the package by dotted name (a package by its own name), parsed."""
    modules = {}
    for path in sorted((ROOT / "cdfts_dask").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = (path, ast.parse(path.read_text(), str(path)))
    return modules


def _imported_modules(name: str, path, tree, modules) -> set[str]:
    """The package's modules that ``name`` imports anywhere (top level or inside a function): ``from P
    import m`` is an edge to the module P.m when there is one, else to P."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = ".".join(base[: len(base) - node.level + 1]) if node.level else ""
            source = ".".join(p for p in (base, node.module or "") if p)
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source)
    return {m for m in found if m in modules and m != name}


def test_the_package_has_no_import_cycle():
    """No module of the package reaches itself through imports, whether made at import time or inside a
    function (issue 9's target: the engine and the fused engine once imported each other)."""
    modules = _package_modules()
    edges = {name: _imported_modules(name, path, tree, modules) for name, (path, tree) in modules.items()}
    state: dict[str, str] = {}

    def cycle_from(name: str, trail: list[str]) -> list[str] | None:
        state[name] = "open"
        for dep in sorted(edges[name]):
            if state.get(dep) == "open":
                return [*trail[trail.index(dep):], dep] if dep in trail else [name, dep]
            if dep not in state and (found := cycle_from(dep, [*trail, dep])):
                return found
        state[name] = "done"
        return None

    assert len(modules) > 30 and edges["cdfts_dask.engine.graph"] >= {"cdfts_dask.engine.plan"}
    for name in modules:
        if name not in state:
            assert (cycle := cycle_from(name, [name])) is None, " -> ".join(cycle)


def test_every_function_and_class_of_the_package_is_used_by_the_package_or_documented():
    """Each function, class and method of the package is referenced by name somewhere in the package
    outside its own definition (a call, an attribute, an import, or a string, as Dask task names and
    ``getattr`` look-ups are), or is shown in README as part of the API (``name(``): no function that only
    tests call (issue 9's target). Dunder methods are Python's protocol and skipped."""
    modules = _package_modules()
    readme = (ROOT / "README.md").read_text()
    uses: dict[str, int] = {}
    defined = []
    for path, tree in modules.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                uses[node.id] = uses.get(node.id, 0) + 1
            elif isinstance(node, ast.Attribute):
                uses[node.attr] = uses.get(node.attr, 0) + 1
            elif isinstance(node, ast.alias):
                uses[node.name.rpartition(".")[2]] = uses.get(node.name.rpartition(".")[2], 0) + 1
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                uses[node.value] = uses.get(node.value, 0) + 1
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.append((path, node.name))
            if isinstance(node, ast.ClassDef):
                defined += [(path, f"{node.name}.{m.name}") for m in node.body
                            if isinstance(m, ast.FunctionDef) and not m.name.startswith("__")]  # fmt: skip
    hooks = {"__getattr__", "__dir__"}  # PEP 562: the package's lazy public names
    unused = [f"{path.relative_to(ROOT)}: {name}" for path, name in defined
              if name not in hooks and not uses.get(name.rpartition(".")[2])
              and f".{name.rpartition('.')[2]}(" not in readme]  # fmt: skip
    assert len(defined) > 300 and not unused, unused
