#!/usr/bin/env python3
"""Many tabs in one headless Chromium: how many load, how many event streams the server holds, how long a
write from a tab takes, and how long the other tabs take to show the next batch once the holder of the
shared stream went away. Compares the page's stream-per-tab path (`?streams=own`, the old behaviour) with
the shared paths (`worker`, `tab`) in the same run. The takeover times include the test's polling of each tab
through chromedriver (tens of milliseconds per tab).

    python3 Benchmarks/page-tabs.py [--tabs 8] [--reps 5]      # after swift build --product diffstream
"""
import argparse
import pathlib
import re
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "checks"), str(ROOT / "checks" / "browser")]
from harness import Server, wait_for  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from test_page import matches  # noqa: E402

WRITE = """const done = arguments[0], started = performance.now(), abort = new AbortController();
setTimeout(() => abort.abort(), 15000);
fetch('/feeds/blackjack/actions/deal', {method: 'POST', signal: abort.signal})
  .then((r) => done([r.status, performance.now() - started]), () => done(['gave up', performance.now() - started]));"""


def chromium():
    options = Options()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(10)
    driver.set_script_timeout(20)
    return driver


def many_tabs(mode, tabs):
    server, driver = Server(), chromium()
    try:
        loaded = []
        for i in range(tabs):
            if i:
                driver.switch_to.new_window("tab")
            try:
                driver.get(f"{server.url}/?feed=blackjack&streams={mode}")
                loaded.append(driver.current_window_handle)
            except Exception:  # the page did not load within the timeout
                pass
        document = server.request("GET", "/feeds/blackjack")
        for handle in loaded:
            driver.switch_to.window(handle)
            wait_for(lambda: matches(driver, document), message="a loaded tab to be live")
        streams = re.search(r"diffstream_event_streams_open (\d+)", server.call("GET", "/metrics")[2].decode())[1]
        driver.switch_to.window(loaded[-1])
        status, ms = driver.execute_async_script(WRITE)
        return len(loaded), int(streams), status, ms
    finally:
        driver.quit()
        server.stop()


def takeover(mode):
    server, driver = Server(), chromium()
    try:
        handles = []
        for i in range(4):
            if i:
                driver.switch_to.new_window("tab")
            driver.get(f"{server.url}/?feed=home&streams={mode}")
            handles.append(driver.current_window_handle)
        document = server.request("GET", "/feeds/home")
        for handle in handles:
            driver.switch_to.window(handle)
            wait_for(lambda: matches(driver, document), message="four tabs live")
        if mode == "worker":
            driver.execute_script("diffstreamStreams.exitWorker()")
        else:
            leader = next(h for h in handles if driver.switch_to.window(h) or driver.execute_script("return diffstreamStreams.leading"))
            driver.switch_to.window(leader)
            driver.close()
            handles.remove(leader)
        started = time.monotonic()
        server.request("PATCH", "/feeds/home", {"banner": {"id": "after", "title": "After the holder"}})
        document = server.request("GET", "/feeds/home")

        def all_show_it():
            for handle in handles:
                driver.switch_to.window(handle)
                if not matches(driver, document):
                    return False
            return True
        wait_for(all_show_it, interval=0.01, message="the other tabs to show the batch")
        return time.monotonic() - started
    finally:
        driver.quit()
        server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tabs", type=int, default=8)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    print(f"| path | tabs loaded of {args.tabs} | event streams on the server | a write from a tab |")
    print("|------|------|------|------|")
    for mode in ("own", "worker", "tab"):
        loaded, streams, status, ms = many_tabs(mode, args.tabs)
        print(f"| `{mode}` | {loaded} | {streams} | {status} after {ms:.0f} ms |")
    print()
    print(f"| path | holder gone → the next batch shown in every other tab (median of {args.reps}, max) |")
    print("|------|------|")
    times = {"tab": [], "worker": []}
    for _ in range(args.reps):  # the two paths alternate
        for mode, found in times.items():
            found.append(takeover(mode))
    for mode, found in times.items():
        print(f"| `{mode}` | {statistics.median(found) * 1000:.0f} ms, {max(found) * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
