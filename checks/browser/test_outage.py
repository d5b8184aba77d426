"""The page during a Redis outage (issue 26): `event: unavailable` keeps the last state on screen,
marked (the badge, the notice, `data-stale` on the feed's container); `event: available` clears the
mark and the batches that follow apply. Against the scripted server (the real one needs Redis)."""
import pytest

from harness import wait_for  # noqa: E402 (conftest puts checks/ on the path)
from scripted_server import ScriptedServer


@pytest.fixture
def outage_server(browser):
    server = ScriptedServer(without_token=None, outage=True)
    yield server
    browser.get("about:blank")
    server.stop()


def shown(driver):
    return driver.execute_script("""const feed = document.getElementById('feed');
        return {state: document.getElementById('status').dataset.state,
                marker: document.getElementById('stale').hidden ? '' : document.getElementById('stale').textContent,
                stale: feed.getAttribute('data-stale'), title: feed.querySelector('.title')?.textContent ?? null,
                version: document.getElementById('version').textContent,
                subscription: window.diffstream.stale}""")


@pytest.mark.parametrize("mode", ["worker", "own"])
def test_an_outage_marks_the_last_state_and_its_end_clears_the_mark(browser, outage_server, mode):
    browser.get(f"{outage_server.url}/?feed=home&streams={mode}")
    wait_for(lambda: shown(browser)["state"] == "unavailable", message="the unavailable state")
    now = shown(browser)
    assert now["title"] == "Only for you" and now["version"] == "1"  # the last state stays on screen
    assert "Redis unavailable: showing the last state" in now["marker"]
    assert "connection refused" in now["marker"]
    assert now["stale"] == "redis at 127.0.0.1:6379: connection refused"
    assert now["subscription"] == {"detail": "redis at 127.0.0.1:6379: connection refused"}
    outage_server.recover()
    wait_for(lambda: shown(browser)["version"] == "2", message="the batch after available")
    now = shown(browser)
    assert now["state"] == "live" and now["marker"] == "" and now["stale"] is None and now["subscription"] is None
    assert now["title"] == "Back"
    assert len(outage_server.stream_requests) == 1  # no reconnect for an outage
