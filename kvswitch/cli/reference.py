"""The CLI reference (``docs/cli.md``'s generated part), rendered from the argparse parser.

``python -m kvswitch.cli.reference [--lang zh-CN]`` prints it (in English unless asked, whatever
the locale, so that the committed page does not depend on who made it). It walks
``kvswitch.cli.build_parser()``: every
command and sub-command, its usage, description, arguments and options. The usage lines are
rendered here rather than by argparse's formatter, so the text depends neither on the terminal
width nor on the Python version's wrapping rules; help texts are expanded the way argparse
expands them (``%(default)s``, ``%%``), descriptions are shown as ``--help`` shows them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence

from kvswitch.i18n import tr

__all__ = ["cli_reference", "main"]


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _children(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each sub-command, in registration order."""
    sub = _subparsers(parser)
    if sub is None:
        return
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    seen: set[int] = set()
    for name, child in sub.choices.items():
        if id(child) in seen:  # an alias
            continue
        seen.add(id(child))
        yield name, helps.get(name, ""), child


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _args_text(action: argparse.Action) -> str:
    """What follows an option (or stands for a positional) in a usage line."""
    mv = _metavar(action)
    nargs = action.nargs
    if isinstance(action, argparse._SubParsersAction):
        return f"{mv} ..."
    if nargs == "?":
        return f"[{mv}]"
    if nargs == "*":
        return f"[{mv} ...]"
    if nargs == "+":
        return f"{mv} [{mv} ...]"
    if isinstance(nargs, int) and nargs > 1:
        return " ".join([mv] * nargs)
    return mv


def _usage_part(action: argparse.Action) -> str:
    if not action.option_strings:
        return _args_text(action)
    text = action.option_strings[0]
    if _takes_value(action):
        text += " " + _args_text(action)
    return text


def _usage(prog: str, parser: argparse.ArgumentParser) -> str:
    actions = [a for a in parser._actions if a.help is not argparse.SUPPRESS]
    groups = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    parts: list[str] = []
    done: set[int] = set()
    optionals = [a for a in actions if a.option_strings]
    positionals = [a for a in actions if not a.option_strings]
    for action in optionals:
        if id(action) in done:
            continue
        group = groups.get(id(action))
        if group is not None:
            members = [a for a in group._group_actions if a.help is not argparse.SUPPRESS]
            done.update(id(a) for a in members)
            inner = " | ".join(_usage_part(a) for a in members)
            parts.append(f"({inner})" if group.required else f"[{inner}]")
            continue
        done.add(id(action))
        part = _usage_part(action)
        parts.append(part if action.required else f"[{part}]")
    parts += [_usage_part(a) for a in positionals]
    return " ".join([prog, *parts])


def _expand_help(action: argparse.Action, prog: str) -> str:
    """``action.help`` the way argparse prints it (``%(default)s``, ``%%`` …)."""
    if not action.help:
        return ""
    params: dict[str, object] = dict(vars(action), prog=prog)
    for name in list(params):
        if params[name] is argparse.SUPPRESS:
            del params[name]
        elif hasattr(params[name], "__name__"):
            params[name] = getattr(params[name], "__name__")  # noqa: B009 - argparse does the same
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(c) for c in action.choices or ())
    return action.help % params


def _description(text: str | None, prog: str) -> str:
    """A description as ``--help`` shows it (argparse formats it only when it names %(prog))."""
    if not text:
        return ""
    if "%(prog)" in text:
        text = text % {"prog": prog}
    return " ".join(text.split())


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(action: argparse.Action) -> str:
    d = action.default
    if d is None or d is argparse.SUPPRESS or d is False or isinstance(action, argparse._HelpAction):
        return ""
    if d is True and action.nargs == 0:
        return ""
    if isinstance(d, list | tuple) and not d:
        return ""
    return f"`{d}`"


def _section(prog: str, parser: argparse.ArgumentParser, summary: str, depth: int) -> list[str]:
    out = [f"{'#' * depth} `{prog}`", ""]
    if summary:
        out += ["*" + _cell(summary).replace("*", "\\*") + "*", ""]
    out += ["```", _usage(prog, parser), "```", ""]
    desc = _description(parser.description, prog)
    if desc:
        out += [desc, ""]
    positionals = [
        a
        for a in parser._actions
        if not a.option_strings and a.help is not argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)
    ]
    optionals = [
        a
        for a in parser._actions
        if a.option_strings and a.help is not argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)
    ]
    if positionals:
        out += [tr("| argument | description |"), "|---|---|"]
        out += [f"| `{_args_text(a)}` | {_cell(_expand_help(a, prog))} |" for a in positionals]
        out.append("")
    if optionals:
        out += [tr("| option | value | default | description |"), "|---|---|---|---|"]
        for a in optionals:
            names = ", ".join(f"`{s}`" for s in a.option_strings)
            value = f"`{_cell(_args_text(a))}`" if _takes_value(a) else ""
            out.append(f"| {names} | {value} | {_default(a)} | {_cell(_expand_help(a, prog))} |")
        out.append("")
    children = list(_children(parser))
    if children:
        out += [tr("| command | what |"), "|---|---|"]
        out += [f"| [`{prog} {name}`](#{_anchor(f'{prog} {name}')}) | {_cell(text)} |" for name, text, _ in children]
        out.append("")
        for name, text, child in children:
            out += _section(f"{prog} {name}", child, text, min(depth + 1, 4))
    return out


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading that is one code span: lower case, spaces → '-'."""
    return "".join(c for c in heading.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def cli_reference(lang: str = "en") -> str:
    """Every command and sub-command of ``kvswitch``, as markdown, in ``lang`` (``en`` or
    ``zh-CN``; the language in use is put back afterwards)."""
    from kvswitch.cli import build_parser
    from kvswitch.i18n import language, set_language

    before = language()
    set_language(lang)
    try:
        parser = build_parser()
        return "\n".join(_section("kvswitch", parser, "", 2)).rstrip("\n") + "\n"
    finally:
        set_language(before)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kvswitch.cli.reference [--lang en|zh-CN]``: print the reference."""
    parser = argparse.ArgumentParser(
        prog="python -m kvswitch.cli.reference", description="Print the CLI reference (docs/cli.md's generated part)."
    )
    parser.add_argument("--lang", choices=("en", "zh-CN"), default="en")
    args = parser.parse_args(argv)
    sys.stdout.write(cli_reference(args.lang))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
