#!/usr/bin/env python3
"""The man pages render without warnings and document what the programs accept.

What the programs accept is read from the built binaries' own usage text (fsauditctl --help,
fsauditd --help, fsauditd canary --help, fsaudit-helper's usage) and, for fsaudit-helper's request
verbs, from the verb tables in the code: a command, option or verb added without its man page fails
here.

Usage: man_pages_test.py SOURCE_DIR FSAUDITCTL FSAUDITD FSAUDIT_HELPER
"""
import os
import re
import shutil
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def normalized(page):
    """The page's source as words: font escapes, quotes and macro names gone, \\- as -."""
    text = open(page, encoding="utf-8").read()
    text = text.replace("\\-", "-")
    text = re.sub(r"\\f[BIRP]", "", text)
    text = re.sub(r"^\.[A-Z]+ ?", "", text, flags=re.M)
    text = text.replace('"', " ")
    return re.sub(r"\s+", " ", text)


def documented(page, phrases, what):
    text = normalized(page)
    for p in phrases:
        if not re.search(r"(?<![\w-])" + re.escape(p) + r"(?![\w-])", text):
            fail(f"{os.path.basename(page)}: {what} '{p}' is not documented")


def render(man_dir):
    pages = sorted(f for f in os.listdir(man_dir) if re.search(r"\.[1-8]$", f))
    if len(pages) < 5:
        fail(f"expected at least 5 man pages in {man_dir}, found {pages}")
    for f in pages:
        path = os.path.join(man_dir, f)
        rc, _, err = run(["groff", "-man", "-ww", "-z", path])
        if rc != 0 or err.strip():
            fail(f"{f}: groff -man -ww warns: {err.strip()}")
        if shutil.which("man"):
            rc, _, err = run(["man", "--warnings", "-l", path])
            if rc != 0 or err.strip():
                fail(f"{f}: man --warnings: {err.strip()}")
        if not re.search(r"^\.SH EXIT STATUS$", open(path, encoding="utf-8").read(), re.M):
            fail(f"{f}: no EXIT STATUS section")


def options(text):
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text)) - {"--help"})


def ctl_commands(help_text):
    """The command column of fsauditctl --help, without its placeholders: 'canary run', 'jobs'..."""
    out = []
    for line in help_text.splitlines():
        m = re.match(r"^  (\S.*?)(?:\s{2,}|$)", line)
        if not m:
            continue
        words = [w for w in m.group(1).split() if not w.isupper() and not w.startswith("[") and not w.startswith("--")]
        if words:
            out.append(" ".join(words))
    return out


def verbs_in(path, function):
    """The strings of a verb table: the body of `function` in `path`."""
    text = open(path, encoding="utf-8").read()
    m = re.search(re.escape(function) + r"\s*\(\)\s*\{(.*?)\n\}", text, re.S)
    if not m:
        fail(f"cannot find {function}() in {path} (moved? update this test)")
        return []
    return re.findall(r'\{?"([a-z][a-z0-9-]+)"', m.group(1))


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    src, ctl, fsauditd, helper = sys.argv[1:]
    man = os.path.join(src, "man")
    render(man)

    _, out, _ = run([ctl, "--help"])
    cmds = ctl_commands(out)
    if len(cmds) < 10 or "jobs" not in cmds:
        fail(f"fsauditctl --help lists too few commands: {cmds}")
    documented(os.path.join(man, "fsauditctl.8"), cmds, "command")
    documented(os.path.join(man, "fsauditctl.8"), options(out.split("\n\n")[0]), "option")

    _, out, _ = run([fsauditd, "--help"])
    opts = options(out)
    if "--config" not in opts:
        fail(f"fsauditd --help names no --config: {out}")
    documented(os.path.join(man, "fsauditd.8"), opts, "option")
    _, out, _ = run([fsauditd, "canary", "--help"])
    subs = sorted(set(re.findall(r"fsauditd canary ([a-z][a-z-]*)", out)))
    if len(subs) < 4:
        fail(f"fsauditd canary --help lists too few commands: {subs}")
    documented(os.path.join(man, "fsauditd.8"), ["canary " + s for s in subs], "command")
    documented(os.path.join(man, "fsauditd.8"), options(out), "canary option")

    rc, _, err = run([helper, "--no-such-option"])
    opts = options(err)
    if rc != 2 or "--config" not in opts:
        fail(f"fsaudit-helper's usage (exit {rc}) names no --config: {err}")
    page = os.path.join(man, "fsaudit-helper.8")
    documented(page, opts, "option")
    verbs = (verbs_in(os.path.join(src, "probes/canary/helper_protocol.cpp"), "helper_verbs")
             + verbs_in(os.path.join(src, "probes/canary/helper_verbs_host.cpp"), "host_verbs")
             + verbs_in(os.path.join(src, "probes/scrub/helper_verbs.cpp"), "scrub_helper_verbs"))
    # Argument names of the host verb table come along; keep what looks like a verb (has a hyphen).
    verbs = sorted({v for v in verbs if "-" in v})
    if len(verbs) < 8:
        fail(f"too few helper verbs found in the code: {verbs}")
    documented(page, verbs, "verb")

    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print(f"man pages: all render cleanly; {len(cmds)} fsauditctl commands, {len(subs)} canary commands, "
          f"{len(verbs)} helper verbs documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
