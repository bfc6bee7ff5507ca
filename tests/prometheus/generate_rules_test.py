#!/usr/bin/env python3
"""Tests of alerts/generate_rules.py: the committed alerts/fsaudit.rules.yml is its output, and the
template only names thresholds that alerts/thresholds.yml defines (ctest prometheus.generate_rules)."""
import os
import re
import sys
import unittest

SRC = os.environ.get("FSAUDIT_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ALERTS = os.path.join(SRC, "alerts")
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, ALERTS)
import generate_rules as gr  # noqa: E402


def read(name):
    with open(os.path.join(ALERTS, name)) as f:
        return f.read()


class GenerateRules(unittest.TestCase):
    def test_committed_rules_are_the_generators_output(self):
        rendered = gr.render(read("fsaudit.rules.in.yml"), gr.load_thresholds(os.path.join(ALERTS, "thresholds.yml")),
                             gr.DEFAULT_RUNBOOK_BASE)
        self.assertEqual(read("fsaudit.rules.yml"), rendered,
                         "alerts/fsaudit.rules.yml is stale: run python3 alerts/generate_rules.py")

    def test_committed_alert_reference_is_the_generators_output(self):
        with open(os.path.join(SRC, "docs", "runbooks.md")) as f:
            want = gr.alert_reference(read("fsaudit.rules.yml"), f.read())
        with open(os.path.join(SRC, "docs", "alerts.md")) as f:
            self.assertEqual(f.read(), want, "docs/alerts.md is stale: run python3 alerts/generate_rules.py")

    def test_alert_without_runbook_meaning_is_an_error(self):
        rules = "groups:\n  - name: g\n    rules:\n      - alert: FsauditX\n        labels: {severity: warning}\n"
        with self.assertRaisesRegex(ValueError, "no section '## FsauditX'"):
            gr.alert_reference(rules, "## FsauditY\n\n**Means**: y\n")
        self.assertIn("| [FsauditX](runbooks.md#fsauditx) | warning | - | g | x |",
                      gr.alert_reference(rules, "## FsauditX\n\n**Means**: x\n"))

    def test_template_names_only_known_thresholds(self):
        thresholds = gr.load_thresholds(os.path.join(ALERTS, "thresholds.yml"))
        used = {m.group(1) for m in gr.PLACEHOLDER.finditer(read("fsaudit.rules.in.yml"))}
        self.assertTrue(used, "the template uses no threshold")
        self.assertEqual(used - thresholds.keys(), set())

    def test_unknown_threshold_is_an_error(self):
        with self.assertRaisesRegex(KeyError, "nope"):
            gr.render("expr: x > ${nope}", {"a": 1}, "u")

    def test_unknown_format_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "unknown format"):
            gr.render("expr: x > ${a:hours}", {"a": 1}, "u")

    def test_formats(self):
        t = {"r": 0.05, "n": 7, "h": 86400, "m": 1800, "s": 90, "f": 0.5}
        self.assertEqual(gr.render("${r} ${n} ${f} ${r:percent}", t, "u"), "0.05 7 0.5 5")
        self.assertEqual(gr.render("${h:duration} ${m:duration} ${s:duration}", t, "u"), "1d 30m 90s")
        self.assertEqual(gr.render("${h:words} ${m:words} ${s:words}", t, "u"), "1 day 30 minutes 90 seconds")
        with self.assertRaisesRegex(ValueError, "whole number of seconds"):
            gr.render("${f:duration}", t, "u")

    def test_every_alert_gets_its_runbook_url(self):
        out = gr.render("      - alert: FsauditFooBar\n        annotations:\n          summary: x\n", {}, "https://wiki/rb.md")
        self.assertIn('          runbook_url: "https://wiki/rb.md#fsauditfoobar"\n', out)

    def test_thresholds_file_is_flat_with_a_comment_above_each_key(self):
        lines = read("thresholds.yml").split("\n")
        keys = 0
        for i, line in enumerate(lines):
            if re.match(r"[a-z0-9_]+:", line):
                keys += 1
                self.assertTrue(i > 0 and lines[i - 1].startswith("# "), f"no comment above {line}")
        self.assertEqual(keys, len(gr.load_thresholds(os.path.join(ALERTS, "thresholds.yml"))))

    def test_thresholds_must_be_numbers(self):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"thresholds-{os.getpid()}.yml")
        with open(path, "w") as f:
            f.write("a: five\n")
        try:
            with self.assertRaisesRegex(ValueError, "not a number"):
                gr.load_thresholds(path)
        finally:
            os.unlink(path)


if __name__ == "__main__":
    unittest.main()
