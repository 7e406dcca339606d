"""Output folders of ckam-bench-check, -reference and -figures (ckam_bench/engine/outputs.py): a command
writes only into a folder it claims, replaces only its own unchanged files, publishes atomically
(a pair never left disagreeing), cleans its own temporaries, and deletes no folder it did not
create."""

import json
import os

import pytest

from ckam_bench.engine import outputs
from ckam_bench.engine.outputs import OutputFolder
from ckam_bench.engine.rundir import FolderRefused


def publish(path, files: dict, identity="job", **kw):
    folder = OutputFolder.inspect(path, "cmd", identity)
    stage = folder.staging()
    for rel, text in files.items():
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        (stage / rel).write_text(text)
    return folder.publish(**kw)


def listing(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_new_folder_is_claimed_and_own_files_replaced(tmp_path):
    out = tmp_path / "new" / "out"
    publish(out, {"a.md": "1", "sub/b.md": "2"})
    assert (out / "a.md").read_text() == "1" and (out / "sub" / "b.md").read_text() == "2"
    publish(out, {"a.md": "3"})  # the same job again: its own file is replaced
    assert (out / "a.md").read_text() == "3"
    marker = json.loads((out / outputs.MARKER).read_text())
    assert marker["files"]["a.md"] == [outputs.sha256(out / "a.md")] and marker["staging"] == []
    assert listing(out) == sorted([outputs.LOCK, outputs.MARKER, "a.md", "sub", "sub/b.md"])


@pytest.mark.parametrize("content", [{"notes.txt": "mine"}, {".hydra/notes.txt": "x"}])
def test_a_folder_with_foreign_files_is_refused_untouched(tmp_path, content):
    for rel, text in content.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    before = listing(tmp_path)
    with pytest.raises(FolderRefused, match="did not write"):
        publish(tmp_path, {"a.md": "1"})
    assert listing(tmp_path) == before


def test_another_job_or_command_is_refused(tmp_path):
    publish(tmp_path, {"a.md": "1"}, identity="one")
    with pytest.raises(FolderRefused, match="another cmd job"):
        publish(tmp_path, {"a.md": "2"}, identity="two")
    with pytest.raises(FolderRefused, match="another cmd job"):
        OutputFolder.inspect(tmp_path, "other-command", "one")
    (tmp_path / outputs.MARKER).write_text("{")
    with pytest.raises(FolderRefused, match="damaged"):
        OutputFolder.inspect(tmp_path, "cmd", "one")
    assert (tmp_path / "a.md").read_text() == "1"


def test_a_file_changed_by_the_user_or_not_ours_is_never_replaced(tmp_path):
    publish(tmp_path, {"a.md": "1"})
    (tmp_path / "a.md").write_text("edited by the user")
    with pytest.raises(FolderRefused, match="a.md was not written"):
        publish(tmp_path, {"a.md": "2", "c.md": "new"})
    assert (tmp_path / "a.md").read_text() == "edited by the user"
    assert not (tmp_path / "c.md").exists()  # nothing of the refused publication
    (tmp_path / "b.md").write_text("the user's own file")
    with pytest.raises(FolderRefused, match="b.md was not written"):
        publish(tmp_path, {"b.md": "2"})
    assert (tmp_path / "b.md").read_text() == "the user's own file"
    assert not list(tmp_path.glob(outputs.STAGING + "*"))


def test_keep_never_replaces_even_its_own_file(tmp_path):
    publish(tmp_path, {"ref.npz": "1"})
    with pytest.raises(FolderRefused, match="never replaced"):
        publish(tmp_path, {"ref.npz": "2"}, keep=("ref.npz",))
    assert (tmp_path / "ref.npz").read_text() == "1"


def test_a_kill_between_a_pair_is_rolled_forward(tmp_path, monkeypatch):
    """Killed after renaming the first of two files that must agree: the next start finishes
    the publication from the journal, so the pair never stays disagreeing."""
    publish(tmp_path, {"report.md": "old", "report.html": "old"})
    real, calls = os.replace, []

    def killed(src, dst):
        if outputs.STAGING in str(src) and not str(src).endswith(".tmp"):  # a publication rename
            calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies here
        return real(src, dst)

    folder = OutputFolder.inspect(tmp_path, "cmd", "job")
    stage = folder.staging()
    (stage / "report.md").write_text("new")
    (stage / "report.html").write_text("new")
    monkeypatch.setattr(outputs.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        folder.publish(last=("report.md", "report.html"))
    monkeypatch.setattr(outputs.os, "replace", real)
    texts = {(tmp_path / n).read_text() for n in ("report.md", "report.html")}
    assert texts == {"old", "new"}  # disagreeing, until the next start
    OutputFolder.inspect(tmp_path, "cmd", "job").open()
    assert {(tmp_path / n).read_text() for n in ("report.md", "report.html")} == {"new"}
    assert not list(tmp_path.glob(outputs.STAGING + "*"))
    publish(tmp_path, {"report.md": "newer"})  # both are ours: replaced again
    assert (tmp_path / "report.md").read_text() == "newer"


def test_own_temporaries_removed_at_next_start_and_nothing_else(tmp_path):
    publish(tmp_path, {"a.md": "1"})
    folder = OutputFolder.inspect(tmp_path, "cmd", "job")
    stage = folder.staging()
    (stage / "half.png").write_text("killed while drawing")
    lookalike = tmp_path / (outputs.STAGING + "users")  # not in the marker: not ours
    lookalike.mkdir()
    (lookalike / "keep.txt").write_text("mine")
    OutputFolder.inspect(tmp_path, "cmd", "job").open()
    assert not stage.exists()
    assert (lookalike / "keep.txt").read_text() == "mine"


def test_discard_removes_only_what_this_invocation_created(tmp_path):
    out = tmp_path / "a" / "b"
    folder = OutputFolder.inspect(out, "cmd", "job")
    (folder.staging() / "x.md").write_text("1")
    folder.discard()
    assert list(tmp_path.iterdir()) == []  # a and b were created by this invocation
    existing = tmp_path / "existing"
    existing.mkdir()
    folder = OutputFolder.inspect(existing, "cmd", "job")
    (folder.staging() / "x.md").write_text("1")
    folder.discard()
    assert existing.is_dir()  # an existing folder stays, even empty


def test_a_file_in_place_of_the_folder_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(FolderRefused, match="is a file"):
        OutputFolder.inspect(tmp_path / "f", "cmd", "job")
    assert (tmp_path / "f").read_text() == "x"


def test_a_sweep_folder_claim_refuses_a_users_multirun_yaml(tmp_path):
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "multirun.yaml").write_text("mine\n")
    with pytest.raises(FolderRefused, match="not written by a ckam-bench sweep"):
        outputs.claim_sweep_folder(folder, "hydra: {}\n")
    assert listing(folder) == ["multirun.yaml"]
    (folder / "multirun.yaml").unlink()
    outputs.claim_sweep_folder(folder, "hydra: {}\n")  # an empty folder is claimed
    (folder / "multirun.yaml").write_text("hydra: {}\n")  # what Hydra then writes
    outputs.claim_sweep_folder(folder, "hydra: {a: 1}\n")  # ours: the sweep may run again
    (folder / "multirun.yaml").write_text("edited\n")  # changed since: refused
    with pytest.raises(FolderRefused):
        outputs.claim_sweep_folder(folder, "hydra: {}\n")
    (folder / outputs.SWEEP_MARKER).write_text("[")
    with pytest.raises(FolderRefused, match="damaged"):
        outputs.claim_sweep_folder(folder, "hydra: {}\n")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(FolderRefused, match="is a file"):
        outputs.claim_sweep_folder(tmp_path / "afile", "hydra: {}\n")


def test_a_sweep_that_ran_nothing_restores_its_folder(tmp_path):
    """restore_sweep_folder puts back what the folder held before Hydra wrote (nothing, or an
    earlier sweep's multirun.yaml and marker), and only while multirun.yaml is still ours."""
    folder = tmp_path / "sweep"
    before = outputs.claim_sweep_folder(folder, "hydra: {a: 1}\n")
    (folder / "multirun.yaml").write_text("hydra: {a: 1}\n")  # what Hydra writes
    outputs.restore_sweep_folder(before)
    assert listing(folder) == []  # a new folder: as it was (the caller removes it when empty)
    outputs.claim_sweep_folder(folder, "hydra: {a: 1}\n")
    (folder / "multirun.yaml").write_text("hydra: {a: 1}\n")
    (folder / "0_job").mkdir()
    old = {name: (folder / name).read_bytes() for name in ("multirun.yaml", outputs.SWEEP_MARKER)}
    before = outputs.claim_sweep_folder(folder, "hydra: {a: 2}\n")  # a second sweep ...
    (folder / "multirun.yaml").write_text("hydra: {a: 2}\n")
    outputs.restore_sweep_folder(before)  # ... that ran nothing: the first one's record is back
    assert {name: (folder / name).read_bytes() for name in old} == old
    before = outputs.claim_sweep_folder(folder, "hydra: {a: 3}\n")
    (folder / "multirun.yaml").write_text("not ours\n")
    outputs.restore_sweep_folder(before)  # not the file we listed: nothing touched
    assert (folder / "multirun.yaml").read_text() == "not ours\n"
