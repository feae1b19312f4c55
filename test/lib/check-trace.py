#!/usr/bin/python3
"""Checks a trace.json against the Chrome trace-event format (the JSON Object
Format of "Trace Event Format", Google, 2016; what Perfetto and chrome://tracing
open) and prints what it holds, one fact per line, for FileCheck.

Checked: the top level is an object with a "traceEvents" array; every event has
"ph"; complete events ("X") have a string name, integer pid and tid, and numeric
ts >= 0 and dur >= 0 (microseconds); metadata events ("M") are process_name,
thread_name, process_sort_index or thread_sort_index with the matching "args";
complete events on one thread never partly overlap (they must nest or be
disjoint, or the viewer draws them wrongly); every pid with events is named.

Usage: check-trace.py trace.json   (exit 1 with a message on the first problem)
"""
import collections
import json
import sys


def fail(msg):
    print("check-trace: " + msg, file=sys.stderr)
    sys.exit(1)


def main(path):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("the top level must be an object with a 'traceEvents' array")
    names, spans = {}, collections.defaultdict(list)
    categories = collections.Counter()
    for i, e in enumerate(doc["traceEvents"]):
        where = "event %d" % i
        if not isinstance(e, dict) or "ph" not in e:
            fail(where + ": not an object with 'ph'")
        if not isinstance(e.get("pid"), int):
            fail(where + ": 'pid' must be an integer")
        if e["ph"] == "M":
            kind = e.get("name")
            args = e.get("args", {})
            if kind in ("process_name", "thread_name"):
                if not isinstance(args.get("name"), str):
                    fail(where + ": %s needs args.name" % kind)
                if kind == "process_name":
                    names[e["pid"]] = args["name"]
                elif not isinstance(e.get("tid"), int):
                    fail(where + ": thread_name needs an integer 'tid'")
            elif kind in ("process_sort_index", "thread_sort_index"):
                if not isinstance(args.get("sort_index"), int):
                    fail(where + ": %s needs args.sort_index" % kind)
            else:
                fail(where + ": unknown metadata event '%s'" % kind)
        elif e["ph"] == "X":
            if not isinstance(e.get("name"), str):
                fail(where + ": 'name' must be a string")
            if not isinstance(e.get("tid"), int):
                fail(where + ": 'tid' must be an integer")
            for key in ("ts", "dur"):
                if not isinstance(e.get(key), (int, float)) or e[key] < 0:
                    fail(where + ": '%s' must be a number >= 0" % key)
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"]))
            categories[e.get("cat", "")] += 1
        else:
            fail(where + ": phase '%s' is not used by HetPar traces" % e["ph"])
    eps = 1e-6  # microseconds: rounding of the printed doubles
    for (pid, tid), items in spans.items():
        if pid not in names:
            fail("pid %d has spans but no process_name" % pid)
        items.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, name in items:
            while stack and stack[-1][1] <= start + eps:
                stack.pop()
            if stack and end > stack[-1][1] + eps:
                fail("pid %d tid %d: '%s' [%g, %g] partly overlaps '%s' [%g, %g]"
                     % (pid, tid, name, start, end, stack[-1][2], stack[-1][0], stack[-1][1]))
            stack.append((start, end, name))
    print("processes: %d" % len(names))
    for pid in sorted(names):
        print("process %d: %s" % (pid, names[pid]))
    for cat in sorted(categories):
        print("category %s: %d spans" % (cat, categories[cat]))
    end = max((s[1] for items in spans.values() for s in items), default=0)
    print("last span ends at %.3f ms" % (end / 1000))
    print("trace ok")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        fail("usage: check-trace.py trace.json")
    main(sys.argv[1])
