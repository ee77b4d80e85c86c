"""``taskloom completion bash|zsh``: scripts made from the parser, tried in a real
bash (COMP_WORDS) and a real interactive zsh (on a pseudo-terminal, TAB pressed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real shells started per completion

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "resources" / "examples"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("completion")
    made = {}
    for shell in ("bash", "zsh"):
        result = subprocess.run(
            [sys.executable, "-m", "taskloom", "completion", shell],
            cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        made[shell] = folder / f"taskloom.{shell}"
        made[shell].write_text(result.stdout)
    return made


def bash_complete(script: Path, line: str) -> list[str]:
    """What TAB offers at the end of ``line`` (a trailing space: a new word)."""
    words = line.split() + ([""] if line.endswith(" ") else [])
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
        'COMP_LINE="${COMP_WORDS[*]}"; _taskloom; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    result = subprocess.run(
        ["bash", "-c", program], cwd=EXAMPLES, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    return sorted(word for word in result.stdout.split("\n") if word)


def test_bash_completes_commands_options_choices_and_files(scripts):
    script = scripts["bash"]
    assert bash_complete(script, "taskloom ret") == ["retry"]
    assert bash_complete(script, "taskloom r") == ["recurring.toml", "resume", "retry", "run",
                                                  "run-now"]  # fmt: skip
    assert bash_complete(script, "taskloom run --ex") == ["--example", "--executor"]
    assert bash_complete(script, "taskloom run --example ") == ["etl", "flaky", "recurring"]
    assert bash_complete(script, "taskloom completion ") == ["bash", "zsh"]
    assert "forecast" in bash_complete(script, "taskloom help ")
    assert bash_complete(script, "taskloom status e") == ["etl.toml"]
    assert "--downstream" in bash_complete(script, "taskloom clear etl.toml --")
    assert "--failed" in bash_complete(script, "taskloom retry etl.toml --")
    assert bash_complete(script, "taskloom --theme ") == ["dark", "light", "system"]
    # the value of an option before the command is not the command
    assert bash_complete(script, "taskloom -v --db x.db st") == ["status"]


ZSH_PROBE = r"""
zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z "PS1='> '; autoload -Uz compinit; compinit -u -d '$2'; source '$3'; print READY"
zpty -r -m z out '*READY*'
zpty -w -n z "$1"$'\t'
out=""
for i in {1..60}; do
  if zpty -r -t z chunk; then out+=$chunk; else sleep 0.05; fi
done
print -r -- "$out"
zpty -d z
"""


def zsh_after_tab(script: Path, line: str, tmp_path: Path) -> str:
    probe = tmp_path / "probe.zsh"
    probe.write_text(ZSH_PROBE)
    result = subprocess.run(
        ["zsh", "-f", str(probe), line, str(tmp_path / "zcompdump"), str(script)],
        cwd=EXAMPLES, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    # what the terminal shows: without its escape sequences, bells and backspaces
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|[\x07\x08]", "", result.stdout)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed here")
def test_zsh_completes_commands_options_and_choices(scripts, tmp_path):
    script = scripts["zsh"]
    syntax = subprocess.run(["zsh", "-n", str(script)], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    assert "taskloom run --example" in zsh_after_tab(script, "taskloom run --exa", tmp_path)
    assert "taskloom retry" in zsh_after_tab(script, "taskloom retr", tmp_path)
    listed = zsh_after_tab(script, "taskloom completion ", tmp_path)
    assert "bash" in listed and "zsh" in listed
