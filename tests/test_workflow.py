"""The GitHub workflow (.github/workflows/ci.yml): the README's test command on every push and pull
request, on a fresh Debian machine, and the Pages deploy only after it passes, only from main."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def workflow() -> dict:
    (path,) = (ROOT / ".github" / "workflows").glob("*.yml")  # one workflow: tests gate the deploy
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_every_push_and_pull_request_runs_the_readme_test_command():
    wf = workflow()
    triggers = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as true
    assert "push" in triggers and "pull_request" in triggers
    assert (triggers["push"] or {}).get("branches") is None, "every branch, not only main"
    steps = wf["jobs"]["test"]["steps"]
    assert [s["run"] for s in steps if "run" in s][-1] == "bash .ci/run"
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().endswith("bash dev.sh test")
    assert "bash dev.sh test" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert wf["jobs"]["test"]["container"].startswith("debian:")


def test_pages_are_deployed_only_after_the_tests_pass_on_main():
    jobs = workflow()["jobs"]
    assert jobs["build"]["needs"] == "test" and jobs["deploy"]["needs"] == "build"
    assert "refs/heads/main" in jobs["build"]["if"] and "push" in jobs["build"]["if"]
    assert any(s.get("run") == "python build.py" for s in jobs["build"]["steps"])
