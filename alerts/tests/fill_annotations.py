#!/usr/bin/env python3
"""Maintainer helper: fill the exp_annotations of promtool tests from promtool's own rendering.

promtool compares annotations exactly, so after changing an alert's summary/description run
    python3 fill_annotations.py --refill canary.test.yml
(inside alerts/tests/) and REVIEW the diff: the rendered text is what the on-call person reads.
Only exp_labels lines whose labels equal an alert promtool actually produced get annotations, so a
test whose labels are wrong still fails. Without --refill only lines without annotations are filled.
"""
import json
import re
import subprocess
import sys

import yaml


def seconds(s):
    units = {'ms': 0.001, 's': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 604800, 'y': 31536000}
    return sum(int(n) * units[u] for n, u in re.findall(r'(\d+)(ms|[smhdwy])', s))


def parse_labels(s):
    return {k: json.loads('"' + v + '"') for k, v in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', s)}


def strip(lines):
    out, skip = [], None
    for line in lines:
        if skip is not None:
            if line.strip() and len(line) - len(line.lstrip()) > skip:
                continue
            skip = None
        m = re.match(r'(\s*)exp_annotations:', line)
        if m:
            skip = len(m.group(1))
            continue
        out.append(line)
    return out


def main():
    args = [a for a in sys.argv[1:] if a != '--refill']
    path = args[0]
    lines = open(path).read().split('\n')
    if '--refill' in sys.argv:
        lines = strip(lines)
        open(path, 'w').write('\n'.join(lines))
    out = subprocess.run(['promtool', 'test', 'rules', path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    got = {}
    for m in re.finditer(r'alertname: (\S+), time: (\S+), \n.*?got:\[(.*?)\n            \]', out, re.S):
        got[(m.group(1), seconds(m.group(2)))] = [
            (parse_labels(a), parse_labels(b))
            for a, b in re.findall(r'Labels:\{(.*)\}\n\s*Annotations:\{(.*)\}', m.group(3))]
    res, t, name = [], None, None
    for i, line in enumerate(lines):
        res.append(line)
        if m := re.match(r'\s*- eval_time: (\S+)', line):
            t = seconds(m.group(1))
        if m := re.match(r'\s*alertname: (\S+)', line):
            name = m.group(1)
        m = re.match(r'(\s*)- exp_labels: (\{.*\})\s*$', line)
        if m and not (i + 1 < len(lines) and 'exp_annotations' in lines[i + 1]):
            want = {k: str(v) for k, v in yaml.safe_load(m.group(2)).items()}
            want['alertname'] = name
            for labels, annotations in got.get((name, t), []):
                if labels == want:
                    ind = m.group(1) + '  '
                    res.append(ind + 'exp_annotations:')
                    res += [ind + '  ' + k + ': ' + json.dumps(annotations[k], ensure_ascii=False) for k in sorted(annotations)]
    open(path, 'w').write('\n'.join(res))
    print(subprocess.run(['promtool', 'test', 'rules', path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout)


if __name__ == '__main__':
    main()
