"""Path checks made on the client before any work: nothing is overwritten that must not be.

* :func:`absolute` makes a user path absolute *here*, so that workers (whose
  working directory may differ) write where the user meant.
* :func:`check_run_paths` refuses, before any data is read, an output that is
  the input or the checkpoint store, a checkpoint store that is the input
  (a path, or the files an array input reads: :func:`input_files`),
  any of them nested in another (compared as resolved real paths, so a
  symlink or ``..`` does not hide a clash), a checkpoint path that is a file
  or a folder holding something other than a run, and an output that is a
  symlink to a directory or an existing directory that is not a Zarr array.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
import stat
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: the ``format`` attribute of a checkpoint store's root group (see :mod:`cdfts_dask.store`)
STORE_FORMAT = "cdfts-dask"


#: this process's temporaries in use now (by any of its threads: :func:`replaced_atomically`); the other
#: temporaries named by its pid were left by writes that ended, or were written into after their end
_IN_USE: set[str] = set()  # keyed by _in_use_key
_IN_USE_LOCK = threading.Lock()


def _this_host() -> str:
    """This machine's name as it appears in a temporary name (letters, digits and ``-`` only)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:64] or "host"


def temporary_sibling(path) -> Path:
    """A fresh hidden name next to ``path`` to write into before renaming.

    ``.<name>.<host>.<pid>.<32 hex>.partial``: the writer's machine and process
    are in the name, so that :func:`remove_stale_temporaries` can tell a live
    writer's temporary from one a killed writer left behind.
    """
    path = Path(path)
    return path.with_name(f".{path.name}.{_this_host()}.{os.getpid()}.{uuid.uuid4().hex}.partial")


def _process_is_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # exists but belongs to someone else, or cannot be told: keep its files
    return True


def remove_stale_temporaries(path) -> list[str]:
    """Remove the :func:`temporary_sibling` files / folders of ``path`` that a killed writer left behind.

    Called after a write of ``path`` succeeded; returns the names removed. A
    temporary is removed only when its writer is known to be gone: written by a
    process of this machine that no longer exists, by this process in a write that
    has ended (not in use by any of its threads: a worker still running a task when
    its cluster was lost may write into a transform's temporary after the transform
    removed it), or named in the older form ``.<name>.<32 hex>.partial``, which
    carries neither. The temporaries of a writer still running (another run writing
    the same output at the same time), or of another machine, are left alone:
    removing them would corrupt that run's output.
    """
    path = Path(path)
    writer = r"(?:([A-Za-z0-9-]+)\.([0-9]+)\.)?"  # host and pid; absent in the older form
    pattern = re.compile(rf"\.{re.escape(path.name)}\.{writer}[0-9a-f]{{32}}\.partial")
    host = _this_host()
    removed = []
    for entry in path.parent.iterdir():
        match = pattern.fullmatch(entry.name)
        if not match:
            continue
        writer_host, writer_pid = match.groups()
        if writer_pid is not None and (writer_host != host or _still_written(int(writer_pid), entry)):
            continue
        _remove(entry)
        removed.append(entry.name)
    return removed


def _still_written(pid: int, temporary: Path) -> bool:
    """Whether the temporary ``temporary``, named by the process ``pid`` of this machine, may still be
    written: in use by this process's threads, or by another process that is alive."""
    if pid == os.getpid():
        with _IN_USE_LOCK:
            return _in_use_key(temporary) in _IN_USE
    return _process_is_alive(pid)


def _in_use_key(temporary: Path) -> str:
    """``temporary``'s key in :data:`_IN_USE`: its real folder and its name, however the path was written."""
    return os.path.join(os.path.realpath(temporary.parent), temporary.name)


@contextmanager
def _in_use(temporary: Path) -> Iterator[Path]:
    """``temporary`` marked as in use by this process for the block (:func:`_still_written`)."""
    key = _in_use_key(temporary)
    with _IN_USE_LOCK:
        _IN_USE.add(key)
    try:
        yield temporary
    finally:
        with _IN_USE_LOCK:
            _IN_USE.discard(key)


@contextmanager
def replaced_atomically(path, what: str | None = None, file: bool = False) -> Iterator[Path]:
    """Yield a :func:`temporary_sibling` of ``path`` to write a file or a folder (a Zarr store) into; when
    the block ends without an error it is renamed onto ``path`` and the temporaries of killed writers are
    removed; on an error it is removed and ``path`` is left as it was.  A file replaces a file in one
    rename (a reader sees the old file or the whole new one); a folder replacing anything is renamed in
    after the old one is moved aside, which is removed last.  With ``what`` (``"output"``,
    ``"checkpoint"``) a failed write names ``path`` (:func:`write_errors_named`), its reason taken while
    the temporary still fills a full disk.  With ``file`` (the block writes a file, not a folder) the
    temporary is made first, empty, with the permission bits of the file it will replace
    (:func:`_made_like`)."""
    path = Path(path)
    tmp = temporary_sibling(path)
    try:
        with write_errors_named(what, path) if what else contextlib.nullcontext(), _in_use(tmp):
            if file:
                _made_like(tmp, path)
            yield tmp
            if tmp.is_dir() and (path.exists() or path.is_symlink()):
                with _in_use(temporary_sibling(path)) as old:
                    os.replace(path, old)
                    os.replace(tmp, path)
                    _remove(old)
            else:
                os.replace(tmp, path)
            remove_stale_temporaries(path)
    finally:
        if tmp.exists() or tmp.is_symlink():
            _remove(tmp)


def _made_like(tmp: Path, path: Path) -> None:
    """Create the temporary file ``tmp``, empty, with the permission bits of the file ``path`` it will
    replace, before a byte is written to it, as an editor saving over a file keeps them: a private (0600)
    output is never readable by others, not even while it is written (the writer opens the file that
    exists, which keeps its mode).  Nothing when ``path`` is no file (a new file takes the umask's mode)."""
    if not path.is_file():
        return
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))
    finally:
        os.close(fd)


def write_error_reason(exc: OSError, directory: Path) -> str:
    """A readable reason for a failed write; short writes on a full disk say so."""
    reason = exc.strerror or str(exc)
    try:
        full = os.statvfs(directory).f_bavail == 0
    except OSError:
        full = False
    if full and exc.errno != errno.ENOSPC:
        reason += " (no space left on device)"
    return reason


@contextmanager
def write_errors_named(what: str, path) -> Iterator[None]:
    """An ``OSError`` of the block raised as ``OSError(errno, "<what>: cannot write '<path>': <reason>")``
    (:func:`write_error_reason`; no errno where it had none, as NumPy's short write on a full disk),
    naming the path the user gave (the writes go to a temporary sibling); connection errors and
    timeouts pass as they are."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, (ConnectionError, TimeoutError)):
            raise
        message = f"{what}: cannot write {str(path)!r}: {write_error_reason(exc, Path(path).parent)}"
        raise (OSError(exc.errno, message) if exc.errno else OSError(message)) from None


def _remove(entry: Path) -> None:
    """Remove a file, a link or a whole folder."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


#: ``scheme://`` opening a text: a URL (``s3://``, ``gs://``, ``https://``, ``file://``), not a path
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def refuse_url(path, name: str) -> None:
    """Refuse ``path`` when it is a URL and no local folder ``<scheme>:`` makes it a relative path, naming
    ``name`` and saying what to do.  Read as a path, ``s3://bucket/x.zarr`` was ``./s3:/bucket/x.zarr``:
    ``file not found``, or a folder to write in that does not exist.  Paths here name files on a file
    system this machine and the workers share; object storage is read through a dask array the caller
    opens (``dask.array.from_zarr(url)``, read chunk-wise by the workers), and an output or checkpoint
    is replaced by a rename (:func:`replaced_atomically`), which object stores do not have."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    match = _URL_SCHEME.match(text) if isinstance(text, str) else None
    if match is None or os.path.lexists(match[1] + ":"):
        return
    if match[1].lower() == "file":
        from urllib.parse import unquote, urlsplit

        local = unquote(urlsplit(text).path)
        raise ValueError(f"{name}: {text!r} is a file:// URL: give its path, {local!r}")
    raise ValueError(
        f"{name}: {text!r} is a URL; cdfts-dask takes paths on a file system this machine and the Dask "
        "workers share (an input in object storage: pass a dask array opened from it, in Python, e.g. "
        "cdf_ts(dask.array.from_zarr(url)), read chunk-wise by the workers; outputs, checkpoints and "
        "models: a shared file system, as each is completed by a rename, which object stores lack)"
    )


def absolute(path, name: str = "path") -> str:
    """``path`` made absolute on this machine, and nothing else: no ``..`` dropped as text (the OS
    follows a link before a ``..``: ``lnk/../x`` is ``x`` beside the link's target, which
    ``os.path.abspath`` made ``x`` beside the link), no link resolved (a worker on another node resolves
    the path as its own file system says, as the user's path would be there).  Anything but a text path
    (``str`` or ``os.PathLike`` of ``str``, not empty; no URL: :func:`refuse_url`) is refused with an
    error naming ``name``."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a path (a str or os.PathLike), got {path!r}")
    if not text:
        raise ValueError(f"{name} must be a path, got the empty string")
    refuse_url(text, name)
    return os.path.join(os.getcwd(), text)  # an absolute text stays as it is


def real(path) -> Path:
    """The resolved real path (symlinks and ``..`` followed; the path need not exist)."""
    return Path(os.path.realpath(os.fspath(path)))


def lock_path(path) -> Path:
    """The lock file of a checkpoint store: ``<store>.lock`` next to the store's resolved real path.

    Keyed on the real path, so a symlink or a relative spelling of the same
    store finds the same lock.
    """
    path = real(path)
    return path.with_name(path.name + ".lock")


def _clash(a: Path, b: Path) -> bool:
    """Same path, or one inside the other."""
    return a == b or a in b.parents or b in a.parents


def _node_metadata(path) -> tuple[str | None, dict]:
    """The Zarr node type at ``path`` (``"array"``, ``"group"`` or None) and its v3 ``zarr.json`` (``{}``
    for a v2 node or none), reading only those files."""
    try:
        meta = json.loads(Path(path, "zarr.json").read_text())
    except (OSError, ValueError):
        v2 = {".zarray": "array", ".zgroup": "group"}
        return next((kind for name, kind in v2.items() if Path(path, name).is_file()), None), {}
    return (meta.get("node_type"), meta) if isinstance(meta, dict) else (None, {})


def zarr_node_type(path) -> str | None:
    """``"array"`` / ``"group"`` for a Zarr node at ``path`` (v3 ``zarr.json``, or v2 ``.zarray`` /
    ``.zgroup``), else None (reads only those files)."""
    return _node_metadata(path)[0]


def consolidated_group_above(path) -> Path | None:
    """The outermost Zarr group holding ``path`` (its folder, that folder's, ... while each is a group)
    that carries consolidated metadata (v2 ``.zmetadata``; v3 ``consolidated_metadata`` in
    ``zarr.json``), else None: a listing of its members made before ``path`` was written, which Zarr
    reads instead of the folders, so an array written there since is not one of its members
    (``group[name]`` is a ``KeyError``) until the group is consolidated again, which lists every
    member below it (reads only those files)."""
    outermost = None
    for folder in Path(os.path.abspath(path)).parents:
        kind, meta = _node_metadata(folder)
        if kind != "group":
            return outermost
        if meta.get("consolidated_metadata") is not None or Path(folder, ".zmetadata").is_file():
            outermost = folder
    return outermost


def root_metadata_lost(path) -> bool:
    """A folder holding a run store's first iteration (``iterations/00000/X``, a Zarr array) whose own
    ``zarr.json`` (the run's attributes) is missing or cannot be read as a Zarr group's: a damaged
    cdfts-dask store, named so in its refusals (it is no store to write into, nor a model).  A folder of
    other things that happens to hold an ``iterations`` folder is not one."""
    first = Path(path, "iterations", "00000", "X")
    return zarr_node_type(first) == "array" and zarr_node_type(path) != "group"


def checkpoint_state(path) -> str:
    """What is at a checkpoint path: ``"absent"``, ``"empty"``, ``"run"``, ``"file"`` or ``"foreign"``.

    ``"empty"`` is an empty folder, a Zarr group with no attributes and no
    members (what a run killed right after creating its group leaves), or a
    cdfts-dask store that committed no iteration (``completed < 0``);
    ``"run"`` is any other group whose ``format`` attribute is a cdfts-dask
    store of any version; ``"foreign"`` is anything else in a folder.
    """
    path = Path(path)
    if not path.exists():
        return "absent"
    if not path.is_dir():
        return "file"
    entries = {p.name for p in path.iterdir()}
    if not entries:
        return "empty"
    if "zarr.json" not in entries or zarr_node_type(path) != "group":
        return "foreign"
    try:
        attrs = json.loads((path / "zarr.json").read_text()).get("attributes") or {}
    except (OSError, ValueError):
        return "foreign"
    if str(attrs.get("format", "")).startswith(STORE_FORMAT):
        done = attrs.get("completed")
        nothing_committed = isinstance(done, int) and not isinstance(done, bool) and done < 0
        return "empty" if nothing_committed else "run"
    return "empty" if entries == {"zarr.json"} and not attrs else "foreign"


def check_folder(what: str, folder) -> None:
    """Refuse the folder ``what`` (``"output"``, ``"checkpoint"``) is to be written in when it is a file
    or does not exist (a run makes no folders: a typo would hold its result), saying why when a name in
    it starts with ``~``: the shell leaves ``--checkpoint=~/runs`` as it is, and Python does not expand
    it either."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{what}: {str(folder)!r} is a file, not a directory")
    if not folder.is_dir():
        said = f"{what}: directory does not exist: {str(folder)!r}"
        if any(part.startswith("~") for part in folder.parts):
            said += " ('~' is not expanded here, as the shell leaves it after '=': write the home folder out)"
        raise ValueError(said)


def existing_run(checkpoint) -> str:
    """The refusal of a run that would start over a store holding a run, without ``resume``."""
    return (f"checkpoint {str(checkpoint)!r} already exists; pass resume=True (--resume) to continue it, "
            "or choose another path")  # fmt: skip


def check_checkpoint_path(checkpoint, resume: bool | None = None) -> str:
    """Refuse a checkpoint path that is a file or a folder of other things, a new one in a folder that
    does not exist or is a file (:func:`check_folder`), and, when ``resume`` is known
    and false, one holding a run (:func:`existing_run`); return its state."""
    state = checkpoint_state(checkpoint)
    if state == "absent":
        check_folder("checkpoint", Path(checkpoint).parent)
    if state == "run" and resume is not None and not resume:
        raise FileExistsError(existing_run(checkpoint))
    if state == "file":
        raise ValueError(
            f"checkpoint: {str(checkpoint)!r} is an existing file, not a checkpoint store (a folder); "
            "choose another path"
        )
    if state == "foreign" and root_metadata_lost(checkpoint):
        raise ValueError(
            f"checkpoint: {str(checkpoint)!r} holds a run store's iterations, but its zarr.json (the run's "
            "attributes) is missing or cannot be read: the store is damaged and its run cannot be resumed; "
            "move it aside or remove it, and start again"
        )
    if state == "foreign":
        raise ValueError(
            f"checkpoint: {str(checkpoint)!r} is an existing folder that is not a cdfts-dask run store; "
            "refusing to write into it (choose a new path)"
        )
    return state


def check_output_path(output) -> None:
    """Refuse an output that is a symlink to a directory, or an existing directory not a Zarr array."""
    path = Path(output)
    if path.is_symlink() and path.is_dir():
        raise ValueError(
            f"output: {str(output)!r} is a symbolic link to a directory ({str(real(path))!r}); "
            "refusing to replace it (give the real path or another name)"
        )
    if path.is_dir() and zarr_node_type(path) != "array":
        raise ValueError(
            f"output: {str(output)!r} is an existing directory that is not a Zarr array; "
            "refusing to replace it (choose another path)"
        )
    if path.is_dir() and path.suffix.lower() != ".zarr":  # a file would have to replace the folder
        raise ValueError(
            f"output: {str(output)!r} is an existing Zarr array (a directory), and a {path.suffix.lower()} "
            "output is a file; refusing to replace it (choose another path)"
        )


def input_files(X) -> list[str]:
    """The local files and folders that the input X is read from: X itself when it is a path; for an
    array, the folder of a Zarr array on a local store, the file of a ``numpy.memmap`` (or of the memmap
    a NumPy array views), and every one of those that a dask array's graph holds (``da.from_zarr``), with
    the local files of the fsspec ``OpenFile`` objects it holds (``dd.read_csv(p).to_dask_array()``).
    Arrays in memory or on remote stores read no local file: ``[]``.  So does ``da.from_array`` of a
    memmap: dask (2026.8) puts a copy in memory into the graph, which is what the run reads (writing
    the output over that file loses nothing the run needs, as with ``np.load(p)`` in memory).  A file
    that a task of the graph opens by name (``da.from_delayed(delayed(np.load)(p))``) is not seen."""
    if isinstance(X, (str, os.PathLike)):
        return [os.fspath(X)]
    found: dict[str, None] = {}  # ordered, without repeats
    seen: set[int] = set()
    pending = [X.__dask_graph__().values() if hasattr(X, "__dask_graph__") else [X]]
    while pending:
        for value in pending.pop():
            if id(value) in seen or isinstance(value, (str, bytes, int, float, slice)) or value is None:
                continue
            seen.add(id(value))
            path = _file_behind(value)
            if path is not None:
                found[path] = None
            elif isinstance(value, (tuple, list, set, frozenset)):
                pending.append(value)
            elif isinstance(value, dict):
                pending.append(value.values())
            elif type(value).__module__.startswith("dask."):  # a task of the graph: look at what it holds
                parts = [getattr(value, name, None) for name in ("value", "args", "kwargs")]
                pending.append([part for part in parts if part is not None])
    return list(found)


def _is_local(fs) -> bool:
    """Whether an fsspec file system (or an async one's sync wrapper) is the local one."""
    protocol = getattr(getattr(fs, "sync_fs", fs), "protocol", None)
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    return "file" in protocols or "local" in protocols


def _file_behind(array) -> str | None:
    """The local file or folder an object of a graph reads (see :func:`input_files`), else None: a
    memmap's file, a Zarr array's folder, or an fsspec ``OpenFile``'s path (``dd.read_csv`` puts one
    in each of its tasks, so ``dd.read_csv(p).to_dask_array()`` reads p)."""
    import numpy as np

    while isinstance(array, np.ndarray) and not isinstance(array, np.memmap) and array.base is not None:
        array = array.base  # a view of a memmap (np.asarray, a slice) reads its file too
    if isinstance(array, np.memmap):
        return None if array.filename is None else os.fspath(array.filename)
    if type(array).__module__.startswith("fsspec") and hasattr(array, "fs") and hasattr(array, "path"):
        return os.fspath(array.path) if _is_local(array.fs) else None  # an OpenFile
    if not type(array).__module__.startswith("zarr") or not hasattr(array, "store"):
        return None
    store = array.store
    root = getattr(store, "root", None)  # zarr's LocalStore
    if root is None:  # an FsspecStore (``da.from_zarr(path)`` opens one) on the local file system
        fs = getattr(store, "fs", None)
        root = store.path if _is_local(fs) else None
    if root is None:
        return None
    inner = getattr(array, "path", "") or ""  # the array's place in its store ("" at the root)
    return os.path.join(os.fspath(root), inner) if inner else os.fspath(root)


def check_run_paths(inputs=(), output=None, checkpoint=None, model=None, resume: bool | None = None) -> None:
    """All the path checks of a run, before any data is read: ``inputs`` the files the input is read
    from (:func:`input_files`), ``output`` and ``checkpoint`` paths or None (not given), ``model`` the
    store a fitted run is replayed from (read only: it may be read as the input too, never written),
    ``resume`` the run's (None: not known here; see :func:`check_checkpoint_path`)."""
    # in this order, so that a message asks for another path of the later role: an output is never the
    # input nor a store (the checkpoint, or the model), a checkpoint never the input
    roles = [("input", path) for path in inputs]
    roles += [("model", model), ("checkpoint", checkpoint), ("output", output)]
    named = [(role, path) for role, path in roles if path is not None]
    for i, (role_a, a) in enumerate(named):
        for role_b, b in named[i + 1 :]:
            ra, rb = real(a), real(b)
            if {role_a, role_b} == {"input", "model"}:
                continue  # both only read
            if _clash(ra, rb):
                how = "is" if ra == rb else "is inside" if ra in rb.parents else "contains"
                raise ValueError(
                    f"{role_b} {str(b)!r} {how} the {role_a} {str(a)!r} (resolved: {str(rb)!r}); "
                    f"refusing to overwrite it: choose another {role_b} path"
                )
    if checkpoint is not None:
        lock = lock_path(checkpoint)  # written and emptied by the run: never a file of the user's
        for role, path in named:
            if role != "checkpoint" and _clash(real(path), lock):
                raise ValueError(
                    f"checkpoint {str(checkpoint)!r}: its lock file {str(lock)!r} would be the {role} "
                    f"{str(path)!r}; refusing to overwrite it: choose another checkpoint path"
                )
        check_checkpoint_path(checkpoint, resume)
    if output is not None:
        check_output_path(output)
