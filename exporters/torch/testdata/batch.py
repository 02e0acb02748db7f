#!/usr/bin/env python3
"""Runs several export.py / reference.py command lines in one Python process (importing torch
costs most of a run), for export_test.go.

stdin: a JSON list of {"tool": "export" | "reference", "argv": [...]}; stdout: a JSON list of
{"rc": int, "stdout": str, "stderr": str}, one per entry. Each entry runs the tool's main(argv)
exactly as its command line would; argparse's exits become rc.
"""

import contextlib
import io
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import export  # noqa: E402
import reference  # noqa: E402

TOOLS = {"export": export.main, "reference": reference.main}


def run(tool, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = TOOLS[tool](argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
        except Exception:  # a bug in the tool: report it with its traceback, keep going
            traceback.print_exc(file=err)
            rc = 99
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main():
    jobs = json.load(sys.stdin)
    json.dump([run(j["tool"], j["argv"]) for j in jobs], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
