"""What a hand-in leaves, removed without fail (grader/sandbox/removal.py, issue 39): deep and wide trees,
modes and attributes that refuse, links that must not be followed, FIFOs, odd names, mount points; what
cannot go within the bounds is renamed aside, made the remover's alone, and reported once."""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from grader.sandbox import removal
from grader.sandbox.removal import Bounds, Removal, Stop

ROOT = os.geteuid() == 0
_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS = 0x80086601, 0x40086602
_IMMUTABLE, _APPEND = 0x10, 0x20


def chain(top: Path, levels: int) -> None:
    """`levels` nested folders below `top`, made one descriptor at a time (no path could name the last),
    with a file at the bottom."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(os.open("bottom", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    os.close(fd)


def files(folder: Path, count: int) -> None:
    """`count` names of empty files in a new `folder`: hard links, 50,000 to a file (ext4 allows 65,000),
    which a removal unlinks one by one as it would files (making 200,000 inodes took 60-80 s on the test
    machine's ext4, the links 3 s)."""
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    source = ""
    for number in range(count):
        if number % 50_000 == 0:
            source = f"f{number}"
            os.close(os.open(source, os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
        else:
            os.link(source, f"f{number}", src_dir_fd=fd, dst_dir_fd=fd)
    os.close(fd)


def set_attributes(path: Path, flags: int) -> bool:
    """chattr; whether the file system and the caller's privileges allowed it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.ioctl(fd, _FS_IOC_SETFLAGS, bytearray(flags.to_bytes(4, sys.byteorder)))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    """A folder of the grader's that links in a hand-in's tree point at: it must stay whole."""
    folder = tmp_path / "canary"
    (folder / "inner").mkdir(parents=True)
    (folder / "keep.txt").write_text("the grader's")
    (folder / "inner" / "keep.txt").write_text("the grader's")
    return folder


def whole(canary: Path) -> bool:
    return sorted(str(p.relative_to(canary)) for p in canary.rglob("*")) == [
        "inner",
        "inner/keep.txt",
        "keep.txt",
    ]


def test_a_chain_of_3000_folders_is_removed(tmp_path: Path) -> None:
    chain(tmp_path / "deep", 3000)
    outcome = removal.remove(tmp_path / "deep")
    assert outcome.complete and outcome.removed == 3002, outcome
    assert not (tmp_path / "deep").exists()


def test_a_chain_deeper_than_the_bound_is_set_aside_and_a_later_removal_finishes(tmp_path: Path) -> None:
    chain(tmp_path / "deep", 60)
    outcome = removal.remove(tmp_path / "deep", Bounds(depth=20), aside="grader-leftover-1-x")
    assert outcome.stop is Stop.DEPTH and outcome.moved_to == str(tmp_path / "grader-leftover-1-x")
    assert not (tmp_path / "deep").exists()
    assert "moved to" in outcome.describe() and "rm -rf" in outcome.describe()
    assert removal.remove(tmp_path / "grader-leftover-1-x").complete
    assert list(tmp_path.iterdir()) == []


def test_more_entries_than_the_bound_are_set_aside_private_and_removed_in_turns(tmp_path: Path) -> None:
    files(tmp_path / "many", 2500)
    first = removal.remove(tmp_path / "many", Bounds(entries=1000), aside="aside")
    assert first.stop is Stop.ENTRIES and first.removed == 1000
    aside = tmp_path / "aside"
    assert stat.S_IMODE(aside.stat().st_mode) == 0o700 and aside.stat().st_uid == os.geteuid()
    assert len(os.listdir(aside)) == 1500
    second = removal.remove(aside, Bounds(entries=1000), aside="aside-2")
    assert second.stop is Stop.ENTRIES and len(os.listdir(tmp_path / "aside-2")) == 500
    assert removal.remove(tmp_path / "aside-2", Bounds(entries=1000)).complete
    assert list(tmp_path.iterdir()) == []


def test_a_folder_keeps_itself_when_emptied(tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    chain(folder / "a", 50)
    files(folder / "b", 10)
    (folder / "c.txt").write_text("x")
    outcome = removal.empty(folder)
    assert outcome.complete and folder.is_dir() and os.listdir(folder) == []


def test_links_are_removed_never_followed(tmp_path: Path, canary: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink("loop-b", tree / "loop-a")
    os.symlink("loop-a", tree / "loop-b")
    os.symlink(canary, tree / "to-canary")
    os.symlink(f"{canary}/", tree / "to-canary-slash")
    os.symlink(canary / "keep.txt", tree / "to-file")
    os.symlink("..", tree / "up")
    os.symlink("/", tree / "root")
    (tree / "sub").mkdir()
    os.symlink(canary / "inner", tree / "sub" / "deeper")
    assert removal.remove(tree).complete
    assert not tree.exists() and whole(canary)
    os.symlink(canary, tmp_path / "link")  # the path given is itself a link: the link goes, not its target
    assert removal.remove(tmp_path / "link").complete
    assert not (tmp_path / "link").is_symlink() and whole(canary)


def test_fifos_sockets_and_odd_names_are_removed_without_opening_them(tmp_path: Path) -> None:
    import socket

    tree = tmp_path / "tree"
    tree.mkdir()
    os.mkfifo(tree / "fifo")  # opened for reading, it would block until a writer came
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tree / "socket"))
    server.close()
    base = os.fsencode(tree)
    for name in (b"new\nline", b"\x1b[2Jclear", b"\xff\xfe not utf-8", b"-rf", b"x" * 255, b"..."):
        os.mkdir(base + b"/" + name)
        with open(base + b"/" + name + b"/" + name, "wb") as handle:
            handle.write(b"x")
    assert removal.remove(tree).complete
    assert not tree.exists()


def as_unprivileged(test: Callable[[Path], None]) -> None:
    """Run `test` on a fresh folder as an ordinary user, where the kernel holds modes against the owner
    (root passes any mode): in a forked child as `nobody` when the tests run as root."""
    if not ROOT:
        with tempfile.TemporaryDirectory() as own:
            test(Path(own))
        return
    nobody = pwd.getpwnam("nobody")
    folder = Path(tempfile.mkdtemp(prefix="grader-removal-"))
    os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    try:
        child = os.fork()
        if child == 0:
            code = 1
            try:
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
                test(folder)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "failed as an ordinary user"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _locked_tree(folder: Path) -> None:
    tree = folder / "tree"
    (tree / "none" / "inner").mkdir(parents=True)
    (tree / "none" / "inner" / "f").write_text("x")
    (tree / "none" / "f").write_text("x")
    (tree / "none" / "f").chmod(0)
    (tree / "none" / "inner").chmod(0)
    (tree / "none").chmod(0)
    for mode in (0o500, 0o300, 0o600, 0o100):  # no w, no r, no x, x alone
        sub = tree / f"mode-{mode:o}"
        sub.mkdir()
        (sub / "f").write_text("x")
        sub.chmod(mode)
    (tree / "file-000").write_text("x")
    (tree / "file-000").chmod(0)
    assert removal.remove(tree).complete
    assert not tree.exists()
    (folder / "scratch").mkdir()
    (folder / "scratch" / "x").write_text("x")
    (folder / "scratch").chmod(0)  # the folder to empty itself made unreadable
    assert removal.empty(folder / "scratch").complete
    assert os.listdir(folder / "scratch") == []


def test_folders_and_files_made_unreadable_are_opened_up_and_removed() -> None:
    as_unprivileged(_locked_tree)


@pytest.mark.skipif(not ROOT, reason="only root may set or clear immutable and append-only attributes")
def test_immutable_and_append_only_attributes_are_cleared_where_root_may(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "append").mkdir(parents=True)
    (tree / "append" / "f").write_text("x")
    (tree / "immutable").write_text("x")
    (tree / "frozen").mkdir()
    (tree / "frozen" / "f").write_text("x")
    made = [
        set_attributes(tree / "immutable", _IMMUTABLE),
        set_attributes(tree / "append", _APPEND),
        set_attributes(tree / "frozen", _IMMUTABLE),
    ]
    if not all(made):
        pytest.skip("this file system has no immutable attribute")
    assert removal.remove(tree).complete
    assert not tree.exists()


@pytest.mark.skipif(not ROOT, reason="needs a folder of another user's inside an ordinary user's tree")
def test_what_the_kernel_refuses_stays_set_aside_and_described() -> None:
    """A folder of root's inside an ordinary user's tree: that user may neither empty it nor open it up.
    It stays, the tree is set aside and described; a removal that may (root's) finishes later."""
    nobody = pwd.getpwnam("nobody")
    folder = Path(tempfile.mkdtemp(prefix="grader-removal-"))
    try:
        tree = folder / "tree"
        (tree / "roots").mkdir(parents=True)
        (tree / "roots" / "f").write_text("x")
        (tree / "own.txt").write_text("x")
        for path in (folder, tree, tree / "own.txt"):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        child = os.fork()
        if child == 0:
            code = 1
            try:
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
                outcome = removal.remove(tree, aside="aside")
                described = "Permission denied" in outcome.describe() and "rm -rf" in outcome.describe()
                ok = outcome.stop is Stop.REFUSED and outcome.moved_to == str(folder / "aside")
                code = 0 if ok and described else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert sorted(os.listdir(folder / "aside")) == ["roots"]  # its own file went
        assert removal.remove(folder / "aside").complete
    finally:
        shutil.rmtree(folder, ignore_errors=True)


MOUNTS = """
import os, subprocess, sys
from pathlib import Path
from grader.sandbox import removal
base, canary = Path(sys.argv[1]), Path(sys.argv[2])
tree = base / "tree"
(tree / "tmpfs").mkdir(parents=True)
(tree / "bound").mkdir()
(tree / "f").write_text("x")
subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(tree / "tmpfs")], check=True)
(tree / "tmpfs" / "inside").write_text("y")
subprocess.run(["mount", "--bind", str(canary), str(tree / "bound")], check=True)
outcome = removal.remove(tree, aside="aside")
assert outcome.stop is removal.Stop.MOUNT and outcome.moved_to == str(base / "aside"), outcome
assert (base / "aside" / "tmpfs" / "inside").exists() and (base / "aside" / "bound" / "keep.txt").exists()
assert not (base / "aside" / "f").exists()
kept = base / "kept"
(kept / "mount").mkdir(parents=True)
subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(kept / "mount")], check=True)
(kept / "mount" / "inside").write_text("y")
(kept / "junk").mkdir()
(kept / "junk" / "j").write_text("x")
outcome = removal.empty(kept, keep=removal.mount_identities())
assert outcome.complete and os.listdir(kept) == ["mount"], (outcome, os.listdir(kept))
assert os.listdir(kept / "mount") == ["inside"]
outcome = removal.remove(base / "aside", unmount=True)
assert outcome.complete and not (base / "aside").exists(), outcome
print("mounts held")
"""


@pytest.mark.skipif(not ROOT or shutil.which("unshare") is None, reason="mounts need root and unshare")
def test_mount_points_are_never_entered_nor_removed(tmp_path: Path, canary: Path) -> None:
    """In a mount namespace of the test's own: a tmpfs and a bind mount of a grader's folder inside a
    hand-in's tree stay whole (the tree is set aside, reported); the caller's own mounts stay silently;
    where the namespace is the sandbox's own, other mounts are detached."""
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", MOUNTS, tmp_path, canary],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if "unshare failed" in done.stderr or "Operation not permitted" in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.strip()}")
    assert done.returncode == 0 and "mounts held" in done.stdout, done.stderr
    assert whole(canary)


def test_nothing_raises_and_a_refusal_is_an_outcome(tmp_path: Path) -> None:
    assert removal.remove(tmp_path / "absent").complete
    assert removal.empty(tmp_path / "absent").complete
    (tmp_path / "file").write_text("x")
    assert removal.empty(tmp_path / "file").stop is Stop.REFUSED  # not a folder: said, not raised


def test_an_incomplete_removal_is_reported_once(tmp_path: Path) -> None:
    removal.take_noted()
    files(tmp_path / "many", 30)
    outcome = removal.remove(tmp_path / "many", Bounds(entries=10), aside="aside")
    removal.note(outcome)
    removal.note(removal.remove(tmp_path / "aside"))  # complete: nothing to report
    assert removal.take_noted() == [outcome]
    assert removal.take_noted() == []
    assert Removal.from_message(outcome.as_message()) == outcome  # as the zygote sends it
    assert Removal.from_message({"path": 1}) is None


def test_the_sandboxed_snippets_import_only_the_standard_library() -> None:
    """The zygote imports removal.py and sched_attr.py beside student code."""
    code = textwrap.dedent(
        """
        import sys
        before = set(sys.modules)
        import grader.sandbox.removal, grader.sandbox.sched_attr
        extra = {m.split(".")[0] for m in set(sys.modules) - before} - {"grader"}
        assert not extra & {"numpy", "torch", "pydantic", "rich", "yaml"}, extra
        """
    )
    subprocess.run([sys.executable, "-I", "-c", code], check=True, cwd=Path(__file__).parent.parent)
