#!/usr/bin/env python3
"""Many feeds in one tab (issue 24): the time from a write to the DOM showing it, with the client library.

Two pages in one headless Chromium, against one diffstream server, in the same run:
  shared    50 feeds rendered in one tab by Public/diffstream.js on ONE connection (one multi-feed stream);
  separate  5 feeds, each rendered through a Connection of its own (mode 'own'): one stream per feed.
Each write is a PUT from this script; the time runs from just before the PUT (time.time) to the
MutationObserver callback that sees the written item in its region (performance.timeOrigin + now),
both read from the host's one wall clock. Writes go one at a time, spread round-robin over the page's feeds; the event stream
count is read from /metrics while each page is open.

    python3 Benchmarks/feeds-in-one-tab.py [--writes 200] [--binary .build/release/diffstream]
"""
import argparse
import json
import pathlib
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "checks"))
from harness import Server  # noqa: E402

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>feeds in one tab</title></head>
<body>
<template data-kind="row"><span class="n" data-text="n"></span></template>
<div id="regions"></div>
<script type="module">
  import { connect, Connection } from './diffstream.js';
  const params = new URLSearchParams(location.search);
  const feeds = params.get('feeds').split(',');
  const separate = params.get('separate') === '1';
  window.regions = {};
  for (const feed of feeds) {
    const container = document.createElement('div');
    container.id = `r-${feed}`;
    document.getElementById('regions').append(container);
    const connection = separate ? new Connection({ mode: 'own' }) : connect();
    window.regions[feed] = connection.render(container, feed, { animate: false });
  }
  /// Watches for item `w<n>` in `feed`'s region; `seen[n]` is the wall-clock time (ms) it showed.
  window.seen = {};
  window.expect = (feed, n) => {
    const region = document.getElementById(`r-${feed}`);
    const observer = new MutationObserver(() => {
      if (!region.querySelector(`[data-item-id="w${n}"]`)) return;
      window.seen[n] = performance.timeOrigin + performance.now();
      observer.disconnect();
    });
    observer.observe(region, { childList: true, subtree: true });
  };
  window.ready = () => feeds.every((f) => document.querySelector(`#r-${f} [data-item-id]`));
</script>
</body></html>
"""


def streams_open(server):
    with urllib.request.urlopen(f"{server.url}/metrics") as response:
        text = response.read().decode()
    match = re.search(r"^diffstream_event_streams(?:_open)?(?:\{\})? (\d+)", text, re.M)
    return int(match.group(1)) if match else None


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    options = Options()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(60)
    return driver


def run(driver, server, feeds, separate, writes, counter):
    for feed in feeds:
        server.request("PUT", f"/feeds/{feed}", {"sections": [{"id": "s", "items": [{"id": "w0", "kind": "row", "model": {"n": 0}}]}]})
    driver.get(f"{server.url}/bench.html?feeds={','.join(feeds)}&separate={'1' if separate else '0'}")
    deadline = time.monotonic() + 60
    while not driver.execute_script("return window.ready && window.ready()"):
        if time.monotonic() > deadline:
            raise RuntimeError("the page did not show every feed")
        time.sleep(0.05)
    streams = streams_open(server)
    times = []
    for i in range(writes):
        counter[0] += 1
        n = counter[0]
        feed = feeds[i % len(feeds)]
        driver.execute_script("expect(arguments[0], arguments[1])", feed, n)
        start = time.time() * 1000  # the same host clock as the page's timeOrigin + now
        server.request("PUT", f"/feeds/{feed}", {"sections": [{"id": "s", "items": [{"id": f"w{n}", "kind": "row", "model": {"n": n}}]}]})
        deadline = time.monotonic() + 20
        while (shown := driver.execute_script("return window.seen[arguments[0]] ?? null", n)) is None:
            if time.monotonic() > deadline:
                state = driver.execute_script("const r = regions[arguments[0]]; const s = r.state;"
                                              "return [s.version, s.status, s.connection, r.container.textContent]", feed)
                raise RuntimeError(f"write {n} to {feed} did not show: page {state}, server {server.request('GET', f'/feeds/{feed}')}")
            time.sleep(0.002)
        times.append(shown - start)
    driver.get("about:blank")
    return times, streams


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--binary", default=None, help="the diffstream binary (default: $DIFFSTREAM_BIN or .build/debug)")
    args = parser.parse_args()
    if args.binary:
        import os
        os.environ["DIFFSTREAM_BIN"] = str(pathlib.Path(args.binary).resolve())
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="feeds-in-one-tab-"))
    public = scratch / "public"
    shutil.copytree(ROOT / "Public", public)
    (public / "bench.html").write_text(PAGE)
    driver = browser()
    counter = [0]
    try:
        results = {}
        # Each page gets a server of its own (same binary, same run), so /metrics counts that page's streams only.
        for name, feeds, separate in (("50 feeds, one connection", [f"many{n}" for n in range(50)], False),
                                      ("5 feeds, a stream each", [f"few{n}" for n in range(5)], True)):
            server = Server(public=public)
            try:
                times, streams = run(driver, server, feeds, separate, args.writes, counter)
            finally:
                server.stop()
            results[name] = {"p50_ms": round(statistics.median(times), 2), "p99_ms": round(percentile(times, 99), 2),
                             "mean_ms": round(statistics.fmean(times), 2), "writes": len(times), "event_streams": streams}
        print(json.dumps(results, indent=2))
    finally:
        driver.quit()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
