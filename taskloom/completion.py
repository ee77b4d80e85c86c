"""Shell completion scripts for bash and zsh, made from the command's own argparse
parsers (``taskloom completion bash|zsh``): a new option or command completes
without anyone editing a script.

What completes: the commands (with their one-line summaries in zsh), each
command's options, an option's choices (``--example etl``, ``--theme dark``),
workflow files (``*.toml``) and folders for FILE, any path for options that take
one (``--db``, ``--log-dir``, ``--screenshot``), and a positional's choices
(``completion bash``, ``help run``). Task names are not completed: they would need
the file read at every TAB.
"""

from __future__ import annotations

import argparse
import re

PATH_OPTIONS = {"--db", "--log-dir", "--screenshot"}


def script(commands: argparse.ArgumentParser, shell: str, window=None) -> str:
    """The completion script for ``shell`` ("bash" or "zsh"). ``commands`` is the
    parser of ``taskloom COMMAND ...``; ``window`` the one of ``taskloom [FILE]``."""
    spec = _spec(commands, window)
    return _bash(spec) if shell == "bash" else _zsh(spec)


# ---------------------------------------------------------------------- the parsers
def _options(parser: argparse.ArgumentParser) -> list[dict]:
    found = []
    for action in parser._actions:
        if not action.option_strings:
            continue
        found.append(
            {
                "names": list(action.option_strings),
                "takes": action.nargs != 0,
                "choices": [str(c) for c in action.choices] if action.choices else None,
                "path": bool(PATH_OPTIONS & set(action.option_strings)),
                "help": _plain(action.help),
            }
        )
    return found


def _positionals(parser: argparse.ArgumentParser) -> list[dict]:
    found = []
    for action in parser._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        found.append(
            {
                "name": action.dest,
                "choices": [str(c) for c in action.choices] if action.choices else None,
                "file": action.dest == "file",
                "many": action.nargs in ("*", "+"),
                "help": _plain(action.help) or action.dest,
            }
        )
    return found


def _plain(text) -> str:
    if not text or text == argparse.SUPPRESS:
        return ""
    return re.sub(r"\s+", " ", str(text)).strip()


def _spec(commands: argparse.ArgumentParser, window) -> dict:
    sub = next(a for a in commands._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {choice.dest: _plain(choice.help) for choice in sub._choices_actions}
    names = list(sub.choices)
    each = {}
    for name, parser in sub.choices.items():
        positionals = _positionals(parser)
        if name == "help":  # its COMMAND is any command
            positionals = [{**p, "choices": names} for p in positionals]
        each[name] = {"options": _options(parser), "positionals": positionals}
    top = _options(window) if window is not None else _options(commands)
    return {"commands": names, "summaries": summaries, "each": each, "top": top}


# ---------------------------------------------------------------------- bash
def _words(items) -> str:
    return " ".join(items)


def _bash(spec: dict) -> str:
    value_options: set[str] = set()
    for options in [spec["top"], *(c["options"] for c in spec["each"].values())]:
        for option in options:
            if option["takes"]:
                value_options.update(option["names"])
    cases = []
    for name, command in spec["each"].items():
        opts = _words(n for o in command["options"] for n in o["names"])
        cases.append(f'        {name}) opts="{opts}" ;;')
    top_opts = _words(n for o in spec["top"] for n in o["names"])
    values = []  # "command:option" -> words or files
    for scope, options in [("", spec["top"])] + [
        (name, c["options"]) for name, c in spec["each"].items()
    ]:
        for option in options:
            if not option["takes"]:
                continue
            pattern = "|".join(f"{scope}:{n}" for n in option["names"])
            if option["choices"]:
                reply = f'COMPREPLY=($(compgen -W "{_words(option["choices"])}" -- "$cur"))'
            elif option["path"]:
                reply = 'COMPREPLY=($(compgen -f -- "$cur"))'
            else:
                reply = "COMPREPLY=()"
            values.append(f"        {pattern}) {reply}; return ;;")
    positional_choices = []
    for name, command in spec["each"].items():
        for positional in command["positionals"]:
            if positional["choices"]:
                words = _words(positional["choices"])
                positional_choices.append(
                    f'        {name}) COMPREPLY=($(compgen -W "{words}" -- "$cur")); return ;;'
                )
    nl = "\n"
    return f"""# bash completion for taskloom, made by 'taskloom completion bash' from its parser.
# Use: source <(taskloom completion bash)   (e.g. in ~/.bashrc)
_taskloom() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local cmd="" i word skip=""
    local commands="{_words(spec["commands"])}"
    local takes=" {_words(sorted(value_options))} "
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        if [[ -n "$skip" ]]; then skip=""; continue; fi
        case "$word" in
            -*=*) ;;
            -*) [[ "$takes" == *" $word "* ]] && skip=1 ;;
            *) [[ " $commands " == *" $word "* ]] && cmd="$word"; break ;;
        esac
    done
    if [[ "$cur" != -* && "$prev" == -* && "$takes" == *" $prev "* ]]; then
        case "$cmd:$prev" in
{nl.join(values)}
            *) COMPREPLY=(); return ;;
        esac
    fi
    local opts
    case "$cmd" in
{nl.join(cases)}
        *) opts="{top_opts}" ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    if [[ -z "$cmd" ]]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur") $(compgen -f -X '!*.toml' -- "$cur") \\
            $(compgen -d -- "$cur"))
        return
    fi
    case "$cmd" in
{nl.join(positional_choices)}
    esac
    COMPREPLY=($(compgen -f -X '!*.toml' -- "$cur") $(compgen -d -- "$cur"))
}}
complete -o filenames -o bashdefault -F _taskloom taskloom
"""


# ---------------------------------------------------------------------- zsh
def _zsh_quote(text: str) -> str:
    """Text inside a single-quoted zsh word, with _arguments' [ ] : escaped."""
    text = re.sub(r"([\[\]:\\])", r"\\\1", text)
    return text.replace("'", "'\\''")


def _zsh_option(option: dict) -> list[str]:
    helptext = _zsh_quote(option["help"])
    names = option["names"]
    exclusive = f"({' '.join(names)})" if len(names) > 1 else ""
    if option["takes"]:
        if option["choices"]:
            action = f":value:({' '.join(option['choices'])})"
        elif option["path"]:
            action = ":path:_files"
        else:
            action = ":value: "
        return [f"'{exclusive}{name}[{helptext}]{action}'" for name in names]
    if names == ["-v", "--verbose"]:
        return [f"'*{name}[{helptext}]'" for name in names]
    return [f"'{exclusive}{name}[{helptext}]'" for name in names]


def _zsh_positional(positional: dict) -> str:
    helptext = _zsh_quote(positional["help"])
    if positional["choices"]:
        action = f"({' '.join(positional['choices'])})"
    elif positional["file"]:
        action = "_files -g '*.toml'"
    else:
        action = " "
    prefix = "*" if positional["many"] else ""
    return f"'{prefix}:{helptext}:{action}'"


def _zsh(spec: dict) -> str:
    described = "\n".join(
        f"    '{name}:{_zsh_quote(spec['summaries'].get(name, ''))}'" for name in spec["commands"]
    )
    cases = []
    for name, command in spec["each"].items():
        parts = [p for o in command["options"] for p in _zsh_option(o)]
        parts += [_zsh_positional(p) for p in command["positionals"]]
        body = " \\\n                ".join(parts)
        cases.append(f"            {name})\n                _arguments -s {body} ;;")
    top = " \\\n        ".join(p for o in spec["top"] for p in _zsh_option(o))
    nl = "\n"
    return f"""#compdef taskloom
# zsh completion for taskloom, made by 'taskloom completion zsh' from its parser.
# Use: taskloom completion zsh > ~/.zfunc/_taskloom, with ~/.zfunc on $fpath before
# compinit (or: source <(taskloom completion zsh) after compinit).
_taskloom() {{
    local curcontext="$curcontext" state line
    typeset -A opt_args
    local -a commands
    commands=(
{described}
    )
    _arguments -C -s \\
        {top} \\
        '1: :->first' \\
        '*:: :->rest' && return
    case $state in
        first)
            _describe -t commands 'taskloom command' commands
            _files -g '*.toml'
            ;;
        rest)
            case $line[1] in
{nl.join(cases)}
            *) _files -g '*.toml' ;;
            esac
            ;;
    esac
}}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _taskloom "$@"
else
    compdef _taskloom taskloom
fi
"""
