#!/usr/bin/env python3
"""The layering rules of docs/architecture.md, checked on the source tree.

1. A header that declares parse_* is pure: it includes (directly or through project headers) no
   prometheus, no yaml-cpp and nothing that reaches the host (files, runner, host paths, probe
   context, config).
2. daemon/ includes nothing from probes/ or fsauditd/: the composition root plugs probes in.
3. prometheus is included only by daemon/metrics (store, exposition) and daemon/http.
4. Shipped code opens mountinfo in one place: daemon/probe/targets.cpp (read_mount_table).
5. Dependencies are explicit: a shipped source that includes a header of another component (a folder
   with a CMakeLists.txt that defines a library) belongs to a target that links that library, directly
   or through PUBLIC dependencies. Every header is reachable from the one include root (the repository,
   declared by fsaudit_core), so the compiler cannot refuse such an include: this rule does.
6. Layers: every component (the nearest folder with a CMakeLists.txt) has a rank in RANKS, and a source
   includes headers only of its own component or of components of a lower rank. An include of an equal
   or higher rank is an upward include; a component without a rank is an error too.
7. No cycles: not between components (through their includes), and not between libraries (through
   target_link_libraries), also libraries of one folder.
8. fsauditctl links nothing of the HTTP server, the config reader or yaml-cpp (issue 28): a client
   of the bus needs the bus, not the daemon. Static libraries bring their PRIVATE dependencies into
   the link, so every dependency counts.
9. A probe's header (probes/<x>/probe.hpp) reaches no yaml-cpp (issue 28): the daemon's config reader is
   the only YAML reader, and a probe takes its settings as plain structs. Probes whose config section
   still lives in daemon/config/sections (and so reaches yaml-cpp through reader.hpp) are listed in
   PROBE_YAML_PENDING until the section moves beside the probe; a listed probe that no longer reaches
   yaml-cpp is reported too, so the list only shrinks.

Usage: layering.py SOURCE_DIR        exit 0 when every rule holds, 1 with one line per violation.
       layering.py --self-test       shows that each rule catches a planted violation.
"""
import os
import re
import sys
import tempfile

SHIPPED = ("daemon", "probes", "ctl", "fsauditd")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
PARSE_DECL = re.compile(r'^[A-Za-z_][\w:<>,\s*&]*\bparse_\w+\s*\(', re.M)
IMPURE_SYSTEM = ("prometheus/", "yaml-cpp/", "fstream", "cstdio", "unistd.h", "fcntl.h", "sys/",
                 "spdlog/", "systemd/")
IMPURE_PROJECT = ("daemon/core/files.hpp", "daemon/core/host_paths.hpp", "daemon/runner/", "daemon/probe/probe.hpp",
                  "daemon/config/", "daemon/metrics/", "daemon/systemd/")
# Config section parsers read YAML by design: they are not tool-output parsers.
PARSE_RULE_EXEMPT_DIRS = ("daemon/config/",)
MOUNTINFO_READER = "daemon/probe/targets.cpp"
# Rule 6: lower includes nothing of higher; equal ranks include nothing of each other. docs/architecture.md
# has the same table in words.
RANKS = {
    "daemon/core": 0,                                               # Result, strings, files, HostPaths, fstype, windows
    "daemon/metrics": 1, "daemon/runner": 1, "daemon/systemd": 1,   # store, command runner, sd-notify/journal
    "daemon/probe": 2,                                              # the Probe API, targets, the mount table
    "probes/stack": 2,                                              # the stack model every filesystem fills, and its series
    "daemon/config": 3, "daemon/scheduler": 3,
    "daemon/http": 4, "probes/scrub_driver": 4,                     # /metrics and the page; the scrub driver interface
    "probes/canary_ops": 4,                                         # the canary operations and lab recipe interfaces, plain XFS/ext4 ops
    "daemon/dbus": 5,
    "probes/bcachefs": 5, "probes/btrfs": 5, "probes/capacity": 5, "probes/ext4": 5, "probes/kernel_log": 5,
    "probes/md": 5, "probes/mount": 5, "probes/zfs": 5,
    "probes/xfs": 6,                                                # reads ext4's device naming, capacity's statfs helper
    "probes/latency": 6,                                            # reads btrfs's fsid lookup (a btrfs is one stack)
    "probes/disk": 6,                                               # reads btrfs's fsid lookup and ZFS's member names
    "daemon/app": 7, "ctl": 7, "probes/scrub": 7,                   # the scrub probe drives the filesystems' drivers
    "probes/canary": 8,                                             # uses the scrub probe's helper verbs
    "probes/setup": 9,                                              # reads canary verdicts and scrub state
    "fsauditd": 10,                                                 # the composition root
    "daemon": 10, "probes": 10,                                     # folders that only add their subfolders
}
MOUNTINFO_OPEN = re.compile(r'"[^"\n]*mountinfo"')
CMAKE_CALL = re.compile(r'\b(add_library|add_executable|target_link_libraries|target_sources|set_property)\s*\(([^)]*)\)', re.S)
CMAKE_KEYWORDS = {"STATIC", "SHARED", "OBJECT", "INTERFACE", "PUBLIC", "PRIVATE", "GLOBAL", "APPEND", "PROPERTY",
                  "EXCLUDE_FROM_ALL"}


def sources(root):
    for top in SHIPPED:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".hpp", ".cpp", ".h")):
                    p = os.path.join(d, f)
                    yield os.path.relpath(p, root).replace(os.sep, "/")


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


def code_only(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def includes(root, rel):
    return INCLUDE.findall(code_only(read(root, rel)))


def include_reach(root, rel, system, project=(), seen=None):
    """The first include on a path from `rel` of a system header starting with one of `system` or a
    project header starting with one of `project`, as 'a.hpp -> b.hpp -> <x>'; None if there is none."""
    seen = set() if seen is None else seen
    if rel in seen:
        return None
    seen.add(rel)
    for kind, name in includes(root, rel):
        if kind == "<":
            if name.startswith(system):
                return "<" + name + ">"
            continue
        if project and name.startswith(project):
            return name
        if os.path.exists(os.path.join(root, name)):
            deeper = include_reach(root, name, system, project, seen)
            if deeper:
                return name + " -> " + deeper
    return None


def impure_reach(root, rel):
    """The first include on a path from `rel` that is not pure."""
    return include_reach(root, rel, IMPURE_SYSTEM, IMPURE_PROJECT)


def cmake_graph(root):
    """Targets of the shipped folders: {target: (folder, sources, deps, public deps)}, from CMakeLists.txt."""
    targets, globals_ = {}, {}
    calls = []
    for top in SHIPPED:
        for d, _, files in os.walk(os.path.join(root, top)):
            if "CMakeLists.txt" in files:
                rel = os.path.relpath(d, root).replace(os.sep, "/")
                text = re.sub(r"#[^\n]*", "", read(root, rel + "/CMakeLists.txt"))
                calls += [(rel, kind, args.split()) for kind, args in CMAKE_CALL.findall(text)]
    for rel, kind, args in calls:
        if kind in ("add_library", "add_executable") and args:
            srcs = {rel + "/" + a for a in args[1:] if a not in CMAKE_KEYWORDS and not a.startswith("$")}
            targets[args[0]] = (rel, srcs, set(), set())
        if kind == "set_property" and args[:3] == ["GLOBAL", "APPEND", "PROPERTY"] and len(args) > 4:
            globals_.setdefault(args[3], set()).update(args[4:])
    for rel, kind, args in calls:
        if kind in ("target_link_libraries", "target_sources") and args and args[0] in targets:
            public = True
            for a in args[1:]:
                if a in ("PUBLIC", "INTERFACE", "PRIVATE"):
                    public = a != "PRIVATE"
                    continue
                if kind == "target_sources":
                    targets[args[0]][1].add(rel + "/" + a)
                    continue
                names = globals_.get(a[2:-1], set()) if a.startswith("${") else {a}
                targets[args[0]][2].update(names)
                if public:
                    targets[args[0]][3].update(names)
    return targets


def reachable(targets, name):
    """Folders whose libraries `name` can include from: its own, its direct deps', their PUBLIC deps'."""
    seen, todo = set(), list(targets[name][2])
    while todo:
        t = todo.pop()
        if t in seen or t not in targets:
            continue
        seen.add(t)
        todo += targets[t][3]
    return {targets[name][0]} | {targets[t][0] for t in seen}


def dependency_problems(root, rels):
    targets = cmake_graph(root)
    lib_dirs = {folder for folder, _, _, _ in targets.values()}
    owners = {}
    for name, (folder, srcs, _, _) in targets.items():
        for src in srcs:
            owners.setdefault(src, []).append(name)
    found = {}
    for rel in rels:
        folder = os.path.dirname(rel)
        if folder not in lib_dirs:
            continue
        # A header belongs to every target of its folder: one of them must reach what it includes.
        names = owners.get(rel) or [n for n, t in targets.items() if t[0] == folder]
        allowed = set().union(*(reachable(targets, n) for n in names))
        for kind, inc in includes(root, rel):
            dep = os.path.dirname(inc)
            if kind == '"' and dep in lib_dirs and dep not in allowed:
                found[rel] = "includes " + inc + " but " + "/".join(sorted(names)) + " does not link a library of " + dep
    return found


def components(root):
    """Folders (under the shipped tops) that hold a CMakeLists.txt."""
    found = set()
    for top in SHIPPED:
        for d, _, files in os.walk(os.path.join(root, top)):
            if "CMakeLists.txt" in files:
                found.add(os.path.relpath(d, root).replace(os.sep, "/"))
    return found


def component_of(comps, rel):
    d = os.path.dirname(rel)
    while d and d not in comps:
        d = os.path.dirname(d)
    return d


def cycles(graph):
    """Strongly connected components of more than one node, each sorted (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]; counter[0] += 1; stack.append(start); on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def layer_problems(root, rels):
    comps = components(root)
    found, graph = {}, {}
    for rel in rels:
        a = component_of(comps, rel)
        if a and a not in RANKS:
            found[a + "/CMakeLists.txt"] = "component " + a + " has no rank: add it to RANKS in tests/structure/layering.py (and the table in docs/architecture.md)"
        for kind, inc in includes(root, rel):
            if kind != '"' or not os.path.exists(os.path.join(root, inc)):
                continue
            b = component_of(comps, inc)
            if not b or b == a:
                continue
            graph.setdefault(a, set()).add(b)
            if a in RANKS and b in RANKS and RANKS[b] >= RANKS[a]:
                found[rel] = ("upward include of " + inc + ": " + b + " (rank " + str(RANKS[b]) + ") is not below " + a +
                              " (rank " + str(RANKS[a]) + ")")
    for comp in cycles(graph):
        found[comp[0]] = "component cycle through includes: " + " <-> ".join(comp)
    targets = cmake_graph(root)
    links = {name: {d for d in t[2] if d in targets} for name, t in targets.items()}
    for comp in cycles(links):
        found["/".join(sorted({targets[n][0] for n in comp}))] = "library cycle through target_link_libraries: " + " <-> ".join(comp)
    return found


PROBE_HEADER = re.compile(r"^probes/[^/]+/probe\.hpp$")
# Rule 9's known debt: each takes a config::<X>Config whose header is daemon/config/sections/<x>.hpp,
# which includes daemon/config/reader.hpp (yaml-cpp).
PROBE_YAML_PENDING = {"probes/canary/probe.hpp", "probes/disk/probe.hpp", "probes/kernel_log/probe.hpp",
                      "probes/latency/probe.hpp", "probes/scrub/probe.hpp", "probes/setup/probe.hpp"}


def yaml_reach(root, rel):
    """The include path from `rel` to <yaml-cpp/...>, as 'a.hpp -> b.hpp -> <yaml-cpp/yaml.h>', or None."""
    return include_reach(root, rel, ("yaml-cpp/",))


def probe_yaml_problems(root, rels):
    found = {}
    for rel in rels:
        if not PROBE_HEADER.match(rel):
            continue
        why = yaml_reach(root, rel)
        if why and rel not in PROBE_YAML_PENDING:
            found[rel] = "a probe header reaches yaml-cpp: " + why + " (take settings as a plain struct)"
        elif not why and rel in PROBE_YAML_PENDING:
            found[rel] = "no longer reaches yaml-cpp: remove it from PROBE_YAML_PENDING in tests/structure/layering.py"
    return found


CLIENTS = {"fsauditctl": ("daemon/http", "daemon/config")}
CLIENT_FORBIDDEN_LIBS = ("yaml-cpp", "yaml_cpp", "OpenSSL")


def client_problems(root):
    """What each client program links (transitively) that it must not."""
    targets = cmake_graph(root)
    found = {}
    for client, folders in CLIENTS.items():
        if client not in targets:
            continue
        seen, todo, path = set(), list(targets[client][2]), {}
        for t in todo:
            path[t] = client + " -> " + t
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            bad = (t in targets and targets[t][0] in folders) or t.startswith(CLIENT_FORBIDDEN_LIBS)
            if bad:
                found[targets[client][0] + "/CMakeLists.txt"] = "links " + path[t] + " (a bus client links no daemon internals)"
                break
            for d in (targets[t][2] if t in targets else ()):
                if d not in path:
                    path[d] = path[t] + " -> " + d
                todo.append(d)
    return found


def check(root, notes=None):
    notes = [] if notes is None else notes
    found = {"parse": {}, "daemon": {}, "prometheus": {}, "mountinfo": {}}
    for rel in sources(root):
        text = code_only(read(root, rel))
        incs = INCLUDE.findall(text)
        if rel.endswith(".hpp") and not rel.startswith(PARSE_RULE_EXEMPT_DIRS) and PARSE_DECL.search(text):
            why = impure_reach(root, rel)
            if why:
                found["parse"][rel] = "declares parse_* but reaches " + why
        if rel.startswith("daemon/"):
            for kind, name in incs:
                if kind == '"' and name.startswith(("probes/", "fsauditd/")):
                    found["daemon"][rel] = "daemon/ includes " + name
        if not rel.startswith(("daemon/metrics/", "daemon/http/")):
            for kind, name in incs:
                if kind == "<" and name.startswith("prometheus/"):
                    found["prometheus"][rel] = "includes <" + name + "> outside daemon/metrics and daemon/http"
        if rel != MOUNTINFO_READER and MOUNTINFO_OPEN.search(text):
            found["mountinfo"][rel] = "opens mountinfo itself; use mount_table(ctx) or read_mount_table(host)"
    found["deps"] = dependency_problems(root, list(sources(root)))
    found["layers"] = layer_problems(root, list(sources(root)))
    found["client"] = client_problems(root)
    found["probe_yaml"] = probe_yaml_problems(root, list(sources(root)))
    problems = []
    for rule, hits in found.items():
        for rel, why in sorted(hits.items()):
            problems.append(rel + ": " + why)
    return problems


def self_test():
    planted = {
        "probes/x/parse.hpp": '#pragma once\n#include "probes/x/model.hpp"\nint parse_x(const char*);\n',
        "probes/x/model.hpp": '#pragma once\n#include <prometheus/family.h>\n',
        "daemon/app/a.cpp": '#include "probes/x/parse.hpp"\n',
        "probes/x/probe.cpp": '#include <prometheus/counter.h>\nconst char* p = "/proc/self/mountinfo";\n',
        MOUNTINFO_READER: 'const char* p = "self/mountinfo";\n',
        "probes/y/parse.hpp": '#pragma once\n#include <string_view>\n// parse_y(yaml) reads <yaml-cpp/yaml.h>\nint parse_y(std::string_view);\n',
        "probes/x/CMakeLists.txt": 'add_library(x STATIC probe.cpp)\ntarget_link_libraries(x PRIVATE y)\n',
        "probes/y/CMakeLists.txt": 'add_library(y STATIC y.cpp)\ntarget_link_libraries(y PRIVATE z)\n',
        "probes/y/y.cpp": '#include "probes/z/z.hpp"\n',
        "probes/z/CMakeLists.txt": 'add_library(z STATIC z.cpp)\n',
        "probes/z/z.cpp": '#include "probes/y/parse.hpp"\n',
        "probes/x/uses.cpp": '#include "probes/y/parse.hpp"\n#include "probes/z/z.hpp"\n',
        # rule 6 and 7: daemon/core (rank 0) includes daemon/probe (rank 2); probes/zfs and probes/btrfs (both
        # rank 5) include each other; libraries of one folder link each other; probes/w has no rank.
        "daemon/core/CMakeLists.txt": 'add_library(core STATIC c.cpp)\n',
        "daemon/core/c.cpp": '#include "daemon/probe/p.hpp"\n',
        "daemon/probe/CMakeLists.txt": 'add_library(probe STATIC p.cpp)\ntarget_link_libraries(probe PUBLIC core)\n',
        "daemon/probe/p.hpp": '#pragma once\n',
        "probes/zfs/CMakeLists.txt": 'add_library(zp STATIC a.cpp)\nadd_library(zq STATIC b.cpp)\n'
                                     'target_link_libraries(zp PUBLIC zq btrfsl)\ntarget_link_libraries(zq PUBLIC zp)\n',
        "probes/zfs/a.cpp": '#include "probes/btrfs/b.hpp"\n',
        "probes/zfs/b.cpp": '\n',
        "probes/zfs/a.hpp": '#pragma once\n',
        "probes/btrfs/CMakeLists.txt": 'add_library(btrfsl STATIC b.cpp)\ntarget_link_libraries(btrfsl PUBLIC zp)\n',
        "probes/btrfs/b.hpp": '#pragma once\n',
        "probes/btrfs/b.cpp": '#include "probes/zfs/a.hpp"\n',
        "probes/w/CMakeLists.txt": 'add_library(w STATIC w.cpp)\n',
        "probes/w/w.cpp": '\n',
        "ctl/CMakeLists.txt": 'add_executable(fsauditctl main.cpp)\ntarget_link_libraries(fsauditctl PRIVATE bus)\n',
        "daemon/dbus/CMakeLists.txt": 'add_library(bus STATIC s.cpp)\ntarget_link_libraries(bus PRIVATE web)\n',
        "daemon/http/CMakeLists.txt": 'add_library(web STATIC w.cpp)\n',
        # rule 9: a probe header that reaches yaml-cpp through a config header; one listed as pending that does not.
        "probes/v/probe.hpp": '#pragma once\n#include "daemon/config/c.hpp"\n',
        "daemon/config/c.hpp": '#pragma once\n#include <yaml-cpp/yaml.h>\n',
        "probes/latency/probe.hpp": '#pragma once\n#include <string>\n',
    }
    with tempfile.TemporaryDirectory() as d:
        for rel, text in planted.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        notes = []
        got = "\n".join(check(d, notes) + notes)
    want = ["probes/x/parse.hpp: declares parse_* but reaches probes/x/model.hpp -> <prometheus/family.h>",
            "daemon/app/a.cpp: daemon/ includes probes/x/parse.hpp",
            "probes/x/probe.cpp: includes <prometheus/counter.h> outside",
            "probes/x/probe.cpp: opens mountinfo itself",
            "probes/z/z.cpp: includes probes/y/parse.hpp but z does not link a library of probes/y",
            "probes/x/uses.cpp: includes probes/z/z.hpp but x does not link a library of probes/z",
            "daemon/core/c.cpp: upward include of daemon/probe/p.hpp: daemon/probe (rank 2) is not below daemon/core (rank 0)",
            "probes/zfs/a.cpp: upward include of probes/btrfs/b.hpp: probes/btrfs (rank 5) is not below probes/zfs (rank 5)",
            "probes/btrfs: component cycle through includes: probes/btrfs <-> probes/zfs",
            "library cycle through target_link_libraries: btrfsl <-> zp <-> zq",
            "component probes/w has no rank",
            "ctl/CMakeLists.txt: links fsauditctl -> bus -> web",
            "probes/v/probe.hpp: a probe header reaches yaml-cpp: daemon/config/c.hpp -> <yaml-cpp/yaml.h>",
            "probes/latency/probe.hpp: no longer reaches yaml-cpp"]
    missing = [w for w in want if w not in got]
    clean = ("probes/y/parse.hpp:" not in got and MOUNTINFO_READER + ":" not in got
             and "probes/y/y.cpp" not in got and "uses.cpp: includes probes/y" not in got)
    if missing or not clean:
        print("self-test FAILED; missing:", missing, "clean parts flagged:", not clean, "\n" + got)
        return 1
    print("self-test: every rule caught its planted violation")
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    notes = []
    problems = check(sys.argv[1], notes)
    for n in notes:
        print("note: " + n)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering violation(s); see docs/architecture.md")
        return 1
    print("layering: all rules hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
