#!/usr/bin/env python3
"""Writes gpumemprof's man page and bash completion from the built command's own help.

`gpumemprof --help` lists the commands; each `gpumemprof COMMAND --help` is copied verbatim into the
man page (one section per command) and read for the command's options (its usage line and the
option lines, "  -o, --output FILE   ..."), `export --help`'s FORMAT list gives the completion of
--format, and `run --help` the values of --log-level (its list of levels) and --device-limit (the
GPU names it lists). Run at build time (cmake/install.cmake): a new command, option or format reaches both
files with the next build, and neither can drift from what the command accepts.
"""
import argparse
import os
import re
import subprocess

OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
# "  -o, --output FILE   write FILE..." -> "-o, --output FILE": the option part ends at a double space.
OPTION_LINE = re.compile(r"^ {2,6}(-.*?)(?: {2,}|$)")
COMMAND_LINE = re.compile(r"^  ([a-z][a-z0-9-]*) ")
# export --help: "    csv           one row per..." under "FORMAT:".
FORMAT_LINE = re.compile(r"^    ([a-z][a-z0-9-]*) {2,}")


def output_of(tool, *args):
    return subprocess.run([tool, *args], check=True, capture_output=True, text=True).stdout


def unique(items):
    return list(dict.fromkeys(items))


def options_of(help_text):
    lines = help_text.splitlines()
    found = OPTION.findall(lines[0])
    for line in lines[1:]:
        m = OPTION_LINE.match(line)
        if m:
            found += OPTION.findall(m.group(1))
    return unique(found + ["--help"])


def formats_of(export_help):
    lines = export_help.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith("FORMAT:"))
    formats = []
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        m = FORMAT_LINE.match(line)
        if m:
            formats.append(m.group(1))
    return formats


def roff_text(text):
    """Text shown as is in a no-fill block: backslashes and minus signs escaped, no line read as a request."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e").replace("-", "\\-")
        out.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(out)


def option_text(help_text, option):
    """An option's description in a --help, its continuation lines joined."""
    lines, out = help_text.splitlines(), []
    for i, line in enumerate(lines):
        m = OPTION_LINE.match(line)
        if m and option in OPTION.findall(m.group(1)):
            out.append(line[m.end():])
            for next_line in lines[i + 1:]:
                if OPTION_LINE.match(next_line) or not next_line.startswith(" " * 10):
                    break
                out.append(next_line.strip())
            break
    return " ".join(out)


def values_of(run_help):
    """Option -> the words completing its value: --log-level's listed levels, --device-limit's GPU names."""
    levels = re.findall(r"[a-z]+", option_text(run_help, "--log-level").replace("(default)", ""))
    names = re.search(r"a GPU name \(([^)]*)\)", option_text(run_help, "--device-limit"))
    return {"--log-level": levels, "--device-limit": names.group(1).replace(",", " ").split() if names else []}


def man_page(template, version, top_help, helps):
    sections = []
    for command, text in helps.items():
        sections.append(f".SS gpumemprof {command}\n.nf\n{roff_text(text)}\n.fi")
    return (template.replace("@VERSION@", version)
            .replace("@USAGE@", roff_text(top_help))
            .replace("@COMMANDS@", "\n".join(sections)))


def completion(template, commands, top_options, options, formats, values):
    cases = "\n".join(f"    {c}) options=\"{' '.join(opts)}\" ;;" for c, opts in options.items())
    value_cases = "\n".join(f"    {o}) words=\"{' '.join(v)}\" ;;" for o, v in values.items() if v)
    return (template.replace("@COMMANDS@", " ".join(commands))
            .replace("@VALUES@", value_cases)
            .replace("@TOP_OPTIONS@", " ".join(top_options))
            .replace("@OPTIONS@", cases)
            .replace("@FORMATS@", " ".join(formats)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True, help="the built gpumemprof")
    parser.add_argument("--man-template", required=True)
    parser.add_argument("--man", required=True, help="the man page to write")
    parser.add_argument("--completion-template", required=True)
    parser.add_argument("--completion", required=True, help="the completion script to write")
    args = parser.parse_args()

    version = output_of(args.tool, "--version").split()[-1]
    top_help = output_of(args.tool, "--help")
    commands = [m.group(1) for m in map(COMMAND_LINE.match, top_help.splitlines()) if m]
    helps = {c: output_of(args.tool, c, "--help") for c in commands}
    options = {c: options_of(text) for c, text in helps.items()}
    formats = formats_of(helps["export"])

    # Makefile generators, unlike Ninja, do not create a custom command's output directories.
    for path in (args.man, args.completion):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(args.man_template) as f:
        page = man_page(f.read(), version, top_help, helps)
    with open(args.man, "w") as f:
        f.write(page)
    with open(args.completion_template) as f:
        script = completion(f.read(), commands, options_of(top_help), options, formats, values_of(helps["run"]))
    with open(args.completion, "w") as f:
        f.write(script)


if __name__ == "__main__":
    main()
