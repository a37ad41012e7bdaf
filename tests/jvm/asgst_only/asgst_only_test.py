#!/usr/bin/env python3
"""Drive asgst_only_agent.c in one start-up shape (issue 12, item 1) and
check its result line. Limits: see docs/testing.md ("ASGST-only agents").

  asgst_only_test.py JAVA AGENT CLASSDIR signal|queue|attach
"""
import os
import subprocess
import sys
import time

ITERATOR = 1 << 8
SECONDS = 4


def fail(msg, out=""):
    sys.stderr.write(out)
    print("FAIL:", msg)
    sys.exit(1)


def run_onload(java, agent, classdir, mode):
    opts = "=queue" if mode == "queue" else ""
    cmd = [java, f"-agentpath:{agent}{opts}", "-cp", classdir, "AsgstOnlyFixture", str(SECONDS)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def run_attach(java, agent, classdir):
    jdk = os.path.dirname(os.path.dirname(java))
    jcmd = os.path.join(jdk, "bin", "jcmd")
    cmd = [java, "-XX:+EnableDynamicAgentLoading", "-cp", classdir, "AsgstOnlyFixture", str(SECONDS),
           "wait-for-attach"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        if line.strip() != "ready":
            p.kill()
            fail(f"fixture did not start: {line!r}", p.stderr.read())
        a = subprocess.run([jcmd, str(p.pid), "JVMTI.agent_load", agent], capture_output=True, text=True,
                           timeout=60)
        if a.returncode != 0 or "return code: 0" not in a.stdout:
            p.kill()
            fail(f"jcmd JVMTI.agent_load failed: {a.stdout} {a.stderr}")
        p.stdin.write("go\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("timed out")
    return p.returncode, line + out, err


def main():
    java, agent, classdir, mode = sys.argv[1:5]
    if mode == "attach":
        rc, out, err = run_attach(java, agent, classdir)
    else:
        rc, out, err = run_onload(java, agent, classdir, mode)
    if rc != 0:
        fail(f"java exited with {rc}", out + err)
    lines = [l for l in out.splitlines() if l.startswith("result ")]
    if len(lines) != 1 or "done" not in out:
        fail("no result line or the fixture did not finish", out + err)
    r = {k: int(v) for k, v in (f.split("=") for f in lines[0].split()[1:])}
    print(lines[0])
    checks = []
    if mode == "attach":
        caps = [r["caps_start"], r["caps_death"]]
    else:
        caps = [r["caps_onload"], r["caps_vminit"], r["caps_death"]]
    checks.append((len(set(caps)) == 1 and caps[0] & ITERATOR, f"capabilities equal and nonzero at every stage: {caps}"))
    checks.append((r["before_init_bad"] == 0, "walks before VMInit return only documented codes"))
    if mode == "queue":
        walked = r["handled"]
        checks.append((caps[0] & 1, "ASGST_REGISTER_QUEUE offered"))
        checks.append((r["enqueued"] >= 100, f"at least 100 elements enqueued ({r['enqueued']})"))
        # Exact: nothing in this shape may lose an element (no resize, so no
        # lost_resize). The main thread's queue is deregistered at VMDeath,
        # the workers' ones (never deregistered) are drained and sealed by
        # profile2's own VMDeath pass; an enqueue later than either fails.
        checks.append((walked == r["enqueued"], f"every element enqueued is handled ({walked} of {r['enqueued']})"))
        checks.append(("ASGST_DeregisterQueue refused" not in err, "ASGST_DeregisterQueue of the main thread's queue"))
        # 2 of 2,000+ in the runs recorded in docs/testing.md; a tenth is the limit
        checks.append((r["complete"] >= 0.90 * walked, f"complete queue walks >= 90 % ({r['complete']}/{walked})"))
    else:
        walked = r["java_walks"]
        checks.append((walked >= 100, f"at least 100 Java walks ({walked})"))
        checks.append((r["complete"] >= 0.99 * walked, f"complete walks >= 99 % ({r['complete']}/{walked})"))
        checks.append((r["errors"] <= 0.01 * walked, f"walk errors <= 1 % ({r['errors']})"))
    checks.append((r["hot"] >= 0.6 * r["tops"], f"hotLoop on >= 60 % of the tops ({r['hot']}/{r['tops']})"))
    bad = [what for ok, what in checks if not ok]
    for ok, what in checks:
        print("ok  " if ok else "FAIL", what)
    if any("undocumented" in l or "profile2: " in l and "disabled" in l for l in err.splitlines()):
        bad.append("profile2 reported a problem on stderr")
        sys.stderr.write(err)
    if bad:
        sys.stderr.write(err)
        sys.exit(1)


if __name__ == "__main__":
    main()
