#!/usr/bin/python3
"""The dashboard in a real browser: headless Chromium driven through its DevTools protocol.

    tests/dashboard/browser_test.py BATON_BINARY OUT_DIR
    tests/dashboard/browser_test.py BATON_BINARY OUT_DIR --large DIR   # after build/bin/dashboard_bench --dir DIR

Makes run directories (a finished run, a run that is still being written, one with a line that
is not JSON) and a real search (`baton search`, with median stopping so that some trials are
pruned), starts `baton dashboard` on a free port, and opens each page: no console error or
exception, the expected rows and curves in the DOM, a screenshot of each page in OUT_DIR; then a
value appended to metrics.jsonl while a run's page is open must appear without a reload.
With --large, the pages over dashboard_bench's data instead (a metrics.jsonl of 1,000,000 lines,
a search of 10,000 trials): how long each takes to render once the server has read them.
Exit 77 (skipped, with the reason) when Chromium or python3-websocket is missing.
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77


def skip(why):
    print(f"browser test skipped: {why}")
    sys.exit(SKIP)


try:
    import websocket  # Debian's python3-websocket
except ImportError:
    skip("python3-websocket is not installed (scripts/install-deps.sh --browser)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    skip("chromium is not installed (scripts/install-deps.sh --browser)")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def write_run(d, steps, finished, bad_line=False, start=1):
    os.makedirs(os.path.join(d, "checkpoints"), exist_ok=True)
    os.makedirs(os.path.join(d, "traces"), exist_ok=True)
    t0 = time.time() - steps
    with open(os.path.join(d, "metrics.jsonl"), "a") as f:
        if start == 1:
            f.write(json.dumps({"hyperparameters": {"model": {"name": "fashion_cnn"}}}) + "\n")
        for s in range(start, steps + 1):
            f.write(json.dumps({"step": s, "time": t0 + s, "train/loss": 2.3 * 0.98 ** s}) + "\n")
            if s % 50 == 0:
                f.write(json.dumps({"step": s, "time": t0 + s, "eval/accuracy": 0.6 + 0.3 * s / steps}) + "\n")
            if bad_line and s == 10:
                f.write("this is not json\n")
    with open(os.path.join(d, "recipe.yaml"), "w") as f:
        f.write("model: {name: fashion_cnn}\nmax_duration: 2ep\n")
    with open(os.path.join(d, "checkpoints", "ep0-ba100.ckpt"), "wb") as f:
        f.write(b"\0" * 4096)
    with open(os.path.join(d, "traces", "ep0-ba1.json"), "w") as f:
        f.write('{"traceEvents": []}')
    if finished:
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump({"metrics": {"train/loss": 2.3 * 0.98 ** steps}, "steps": steps, "samples_per_s": 1234.5}, f)


def make_search(baton, root):
    space = os.path.join(root, "space.yaml")
    with open(space, "w") as f:
        f.write("lr: {_type: loguniform, _value: [0.0001, 0.1]}\nlayers: {_type: randint, _value: [1, 5]}\n")
    trial = os.path.join(root, "trial.py")
    with open(trial, "w") as f:
        f.write("import json, math, os, time\n"
                "p = json.loads(os.environ['BATON_TRIAL_PARAMETERS'])\n"
                "v = 0.0\n"
                "for step in range(1, 6):\n"
                "    v = 1 - abs(math.log10(p['lr']) + 2.5) / 3 - 0.02 * abs(p['layers'] - 3) - 0.1 / step\n"
                "    print('baton: ' + json.dumps({'intermediate': v, 'step': step}), flush=True)\n"
                "    time.sleep(0.05)\n"
                "print('baton: ' + json.dumps({'final': v}))\n")
    out = subprocess.run([baton, "search", space, "--command", f"/usr/bin/python3 {trial}", "--trials", "16",
                          "--strategy", "tpe", "--median-stop", "8", "--run-dir", os.path.join(root, "runs", "search")],
                         capture_output=True, text=True, timeout=300)
    check(out.returncode == 0, "baton search made the search (" + out.stdout[-200:] + out.stderr[-300:] + ")")


def make_pareto_searches(baton, root):
    """Searches of 2 and 3 objectives (ZDT1 and DTLZ2 in 4 variables) under ROOT/mo."""
    space = os.path.join(root, "mo_space.yaml")
    with open(space, "w") as f:
        f.write("".join(f"x{j}: {{_type: uniform, _value: [0, 1]}}\n" for j in range(4)))
    trial = os.path.join(root, "mo_trial.py")
    with open(trial, "w") as f:
        f.write("import json, math, os, sys\n"
                "x = [json.loads(os.environ['BATON_TRIAL_PARAMETERS'])[f'x{j}'] for j in range(4)]\n"
                "if sys.argv[1] == '2':\n"
                "    g = 1 + 3 * sum(x[1:])\n"
                "    v = [x[0], g * (1 - math.sqrt(x[0] / g))]\n"
                "else:\n"
                "    g = sum((t - 0.5) ** 2 for t in x[2:])\n"
                "    a, b = x[0] * math.pi / 2, x[1] * math.pi / 2\n"
                "    v = [(1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b), (1 + g) * math.sin(a)]\n"
                "print('baton: ' + json.dumps({'final': v}))\n")
    for n in (2, 3):
        objectives = sum((["--objective", f"f{i}:min"] for i in range(n)), [])
        out = subprocess.run([baton, "search", space, "--command", f"/usr/bin/python3 {trial} {n}", "--trials", "40",
                              "--parallel", "4", "--strategy", "nsga2", "--strategy-option", "population=10", *objectives,
                              "--run-dir", os.path.join(root, "mo", f"mo{n}")], capture_output=True, text=True, timeout=300)
        check(out.returncode == 0, f"baton search made the {n}-objective search (" + out.stdout[-200:] + out.stderr[-300:] + ")")


def make_pbt_search(baton, root):
    """A population-based training search of 4 trials (30 batches each, an exploit every 10) under
    ROOT/mo/pbt; False when there is no Fashion-MNIST to train on."""
    if not os.path.isdir("/usr/share/datasets/fashion-mnist") and not os.environ.get("BATON_DATA_DIR"):
        return False
    space = os.path.join(root, "pbt_space.yaml")
    with open(space, "w") as f:
        f.write("optimizer.lr: {_type: loguniform, _value: [0.01, 0.2]}\n")
    recipe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "recipes", "fashion_mnist.yaml")
    out = subprocess.run([baton, "search", space, "--recipe", recipe, "--set", "max_duration=30ba", "--set", "eval_interval=10ba",
                          "--set", "eval_subset_num_batches=1", "--set", "loggers={}", "--set", "scheduler.name=constant",
                          "--strategy", "pbt", "--strategy-option", "population=4,interval=10ba", "--parallel", "2",
                          "--run-dir", os.path.join(root, "mo", "pbt")], capture_output=True, text=True, timeout=300)
    check(out.returncode == 0, "baton search made the PBT search (" + out.stdout[-200:] + out.stderr[-300:] + ")")
    return out.returncode == 0


def pbt_checks(browser, base, out, searches):
    browser.open(base + "#/")
    browser.wait_for(f"document.querySelectorAll('#searches tbody tr').length === {searches}")
    sid = browser.js("[...document.querySelectorAll('#searches tr[data-search]')].find(tr => tr.textContent.includes('pbt')).dataset.search")
    browser.open(base + "#/search/" + str(sid))
    ok = browser.wait_for("document.querySelectorAll('#trials tbody tr').length === 4", 15)
    time.sleep(0.3)
    browser.screenshot(os.path.join(out, "search_pbt_lineage.png"))
    check(ok, "PBT: the search's page lists its 4 trials")
    lines = browser.js("(c => c ? c.data.datasets.map(d => d.data.length) : null)(Chart.getChart(document.querySelector('[data-chart=lineage]')))")
    check(lines is not None and lines[:4] == [4, 4, 4, 4] and lines[4:] == [2, 2],
          f"PBT: the lineage has a row per trial (its 3 interval ends) and a line per exploit ({lines})")
    cells = browser.js("[...document.querySelectorAll('#trials td.lineage')].map(td => td.textContent).filter(t => t)")
    check(len(cells) >= 1 and all(t.startswith("<- ") and " at " in t for t in cells),
          f"PBT: the trials table's lineage column says whose state each took ({cells})")


def pareto_checks(browser, base, out, searches=2):
    def visit(n):
        browser.open(base + "#/")
        browser.wait_for(f"document.querySelectorAll('#searches tbody tr').length === {searches}")
        sid = browser.js(f"[...document.querySelectorAll('#searches tr[data-search]')].find(tr => tr.textContent.includes('mo{n}')).dataset.search")
        browser.open(base + "#/search/" + str(sid))
        ok = browser.wait_for("document.querySelectorAll('#trials tbody tr').length === 40", 15)
        time.sleep(0.3)
        browser.screenshot(os.path.join(out, f"search_{n}_objectives.png"))
        return ok
    check(visit(2), "2 objectives: the search's page lists its 40 trials")
    points = browser.js("(c => c ? c.data.datasets.map(d => d.data.length) : null)(Chart.getChart(document.querySelector('[data-chart=pareto]')))")
    front = browser.js("document.querySelector('#search-facts').textContent.match(/Pareto front (\\d+)/)[1]")
    check(points is not None and sum(points) == 40 and str(points[1]) == front,
          f"2 objectives: a scatter of the 40 trials with the front marked ({points}, front {front})")
    check(browser.js("document.querySelector('#trials tbody tr td:nth-child(5)').textContent.includes(', ')"),
          "2 objectives: the trials table shows both values")
    check(visit(3), "3 objectives: the search's page lists its 40 trials")
    lines = browser.js("document.querySelectorAll('#parallel polyline').length")
    axes = browser.js("[...document.querySelectorAll('#parallel text')].map(t => t.textContent)")
    check(lines == 40 and axes[-3:] == ["f0 ↓", "f1 ↓", "f2 ↓"],
          f"3 objectives: parallel coordinates with an axis per objective, a line per trial ({lines}, {axes})")
    check(browser.js("document.querySelector('[data-chart=pareto]') === null"), "3 objectives: no 2-d scatter")


class Browser:
    def __init__(self, tmp):
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--remote-debugging-port=0", "--remote-allow-origins=*", f"--user-data-dir={tmp}/profile",
             "--window-size=1400,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.time() + 60
        while time.time() < deadline and port is None:
            line = self.proc.stderr.readline()
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                port = int(m.group(1))
        if port is None:
            raise RuntimeError("chromium did not start its DevTools server")
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self.next_id = 0
        self.errors = []
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable")

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.event(msg)

    def event(self, msg):
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.errors.append("exception: " + json.dumps(p["exceptionDetails"])[:300])
        elif method == "Runtime.consoleAPICalled" and p.get("type") == "error":
            self.errors.append("console.error: " + json.dumps(p.get("args"))[:300])
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            self.errors.append("log: " + p["entry"].get("text", "")[:200] + " " + p["entry"].get("url", ""))

    def js(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return r.get("result", {}).get("value")

    def wait_for(self, expression, seconds=10):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.js(expression):
                return True
            time.sleep(0.1)
        return False

    def open(self, url):
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait()


def page_checks(browser, base, out, root):
    def visit(name, route, ready, what):
        browser.open(base + route)
        check(browser.wait_for(ready, 15), f"{name}: {what}")
        time.sleep(0.3)  # a chart draws on the next frame
        browser.screenshot(os.path.join(out, f"{name}.png"))

    visit("runs", "#/", "document.querySelectorAll('#runs tbody tr').length === 3",
          "the runs table shows the 3 runs")
    check(browser.js("[...document.querySelectorAll('#runs td')].some(td => td.textContent === 'running')"),
          "runs: the run still being written is 'running'")
    check(browser.js("document.querySelectorAll('#searches tbody tr').length === 1"), "runs: the search is listed")
    check(browser.js("document.body.textContent.includes('not a JSON object')") is False,
          "runs: a bad line is a problem of its run page, not of the list")
    visit("run", "#/run/" + browser.js("document.querySelector('#runs tr[data-run] a').getAttribute('href')").split("/")[-1],
          "document.querySelectorAll('#charts canvas').length >= 2 && document.querySelector('#last-values') !== null",
          "a run's page draws its curves (train/loss, eval/accuracy)")
    check(browser.js("document.querySelectorAll('#checkpoints tbody tr').length === 1"), "run: its checkpoint is listed")
    check(browser.js("document.querySelector('#traces a') !== null"), "run: its trace is a link")
    check(browser.js("document.querySelector('#recipe').textContent.includes('fashion_cnn')"), "run: its recipe")
    visit("compare", "#/compare/r1,r2", "document.querySelectorAll('#charts canvas').length >= 1",
          "two runs overlaid")
    n = browser.js("Chart.getChart(document.querySelector('#charts canvas')).data.datasets.length")
    check(n == 2, f"compare: one curve per run ({n})")
    visit("search", "#/search/s1", "document.querySelectorAll('#trials tbody tr').length === 16",
          "a search's page lists its 16 trials")
    trained = browser.js("[...document.querySelectorAll('#trials tbody tr')].filter(tr => tr.children[1].textContent === 'trained').length")
    lines = browser.js("document.querySelectorAll('#parallel polyline').length")
    check(trained >= 1 and lines == trained, f"search: the parallel coordinates draw a line per trained trial ({lines}/{trained})")
    check(browser.js("Chart.getChart(document.querySelector('[data-chart=importance]')).data.labels.length === 2"),
          "search: importance of both parameters")
    pruned = browser.js("document.querySelectorAll('#trials tr.pruned').length")
    print(f"     ({pruned} trial(s) pruned by median stopping)")


def live_check(browser, base, root):
    running = os.path.join(root, "runs", "b")
    browser.open(base + "#/")
    browser.wait_for("document.querySelectorAll('#runs tbody tr').length === 3")
    rid = browser.js("[...document.querySelectorAll('#runs tr[data-run]')].find(tr => tr.textContent.includes('running')).dataset.run")
    browser.open(base + "#/run/" + rid)
    browser.wait_for("document.querySelector('#last-values') !== null")
    with open(os.path.join(running, "metrics.jsonl"), "a") as f:
        f.write(json.dumps({"step": 999, "time": time.time(), "train/loss": 0.123456}) + "\n")
    t0 = time.time()
    seen = browser.wait_for("document.querySelector('#last-values').textContent.includes('0.123456')", 5)
    check(seen, f"live: a value appended to metrics.jsonl shows without a reload ({time.time() - t0:.1f} s)")


def start_dashboard(baton, runs):
    server = subprocess.Popen([baton, "dashboard", runs, "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = server.stdout.readline()
    m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
    if not m:
        raise RuntimeError("baton dashboard did not print its URL: " + line + server.stdout.read()[:500])
    return server, m.group(1)


def render_time(browser, url, ready):
    browser.open("about:blank")
    t0 = time.time()
    browser.call("Page.navigate", url=url)
    ok = browser.wait_for(ready, 30)
    return (time.time() - t0) if ok else None


def large(baton, out, data):
    """Render times over dashboard_bench's data: the server has read it when it prints its URL."""
    server, base = start_dashboard(baton, os.path.join(data, "runs"))
    t0 = time.time()
    urllib.request.urlopen(base + "api/runs", timeout=120).read()  # answered once the server has read it all
    print(json.dumps({"server_read_s": round(time.time() - t0, 3)}))
    browser = Browser(tempfile.mkdtemp(prefix="baton_browser_"))
    try:
        figures = {}
        for name, route, ready in [
                ("runs", "#/", "document.querySelectorAll('#runs tbody tr').length === 1"),
                ("run_1000000_lines", "#/run/r1",
                 "(() => { const c = document.querySelector('#charts canvas'); const ch = c && Chart.getChart(c);"
                 " return !!ch && ch.data.datasets.length > 0 && ch.data.datasets[0].data.length > 100; })()"),
                ("search_10000_trials", "#/search/s1",
                 "document.querySelectorAll('#trials tbody tr').length === 500 &&"
                 " document.querySelectorAll('#parallel polyline').length === 1000")]:
            figures[name] = render_time(browser, base + route, ready)
            check(figures[name] is not None and figures[name] < 1.0,
                  f"large: {name} renders in under 1 s ({figures[name]})")
            browser.screenshot(os.path.join(out, f"large-{name}.png"))
        print(json.dumps({"render_s": figures}))
        check(not browser.errors, "large: no console error" + ("" if not browser.errors else ": " + "; ".join(browser.errors[:3])))
    finally:
        browser.close()
        server.terminate()
        server.wait(timeout=10)


def main():
    if len(sys.argv) == 5 and sys.argv[3] == "--large":
        out = os.path.abspath(sys.argv[2])
        os.makedirs(out, exist_ok=True)
        large(os.path.abspath(sys.argv[1]), out, os.path.abspath(sys.argv[4]))
        sys.exit(1 if failures else 0)
    if len(sys.argv) != 3:
        sys.exit("usage: browser_test.py BATON_BINARY OUT_DIR [--large DIR]")
    baton, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(out, exist_ok=True)
    root = tempfile.mkdtemp(prefix="baton_browser_")
    server = browser = None
    try:
        write_run(os.path.join(root, "runs", "a"), 300, finished=True)
        write_run(os.path.join(root, "runs", "b"), 120, finished=False)
        write_run(os.path.join(root, "runs", "c"), 80, finished=True, bad_line=True)
        make_search(baton, root)
        server, base = start_dashboard(baton, os.path.join(root, "runs"))
        browser = Browser(root)
        page_checks(browser, base, out, root)
        live_check(browser, base, root)
        make_pareto_searches(baton, root)
        pbt = make_pbt_search(baton, root)
        browser.open("about:blank")  # the page polls its server every second: leave it before the server goes
        server.terminate()
        server.wait(timeout=10)
        server, base = start_dashboard(baton, os.path.join(root, "mo"))
        pareto_checks(browser, base, out, 3 if pbt else 2)
        if pbt:
            pbt_checks(browser, base, out, 3)
        check(not browser.errors, "no console error or exception on any page" +
              ("" if not browser.errors else ": " + "; ".join(browser.errors[:5])))
    finally:
        if browser:
            browser.close()
        if server:
            server.terminate()
            server.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
    print(f"screenshots in {out}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("browser test: ok")


if __name__ == "__main__":
    main()
