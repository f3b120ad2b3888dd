"""The console in a real browser: Debian's chromium, driven by Selenium through chromedriver,
against a real `memvault serve` subprocess.

The operator creates a tenant; its admin signs in, issues a key, erases a user and sees the
verified receipt (and verifies the downloaded one), sets the policy, sees a refusal, exports the
audit log (the page says the chain verifies; so does the file), and a form posted without its
CSRF token is refused. With `MEMVAULT_SCREENSHOTS=<dir>` every page is saved there as a PNG
(docs/console/ holds the ones from a run).

When chromium or chromedriver is absent the test skips, unless `CI` is set: then it fails
(`make test` installs them: the Makefile's `browser` target).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memvault.compliance.verify import verify_audit_export, verify_receipt
from tests.apiclient import OPERATOR_KEY
from tests.serving import clean_env, free_port, start_serve, stop, wait_healthy

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _browser_or_skip() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if not missing:
        return
    reason = f"{', '.join(missing)} absent: `make browser` installs Debian's chromium"
    if os.environ.get("CI"):
        pytest.fail(f"CI needs the browser test: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _browser_or_skip()  # before starting a server nothing would use
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data = tmp_path_factory.mktemp("console-serve")
    proc = start_serve(data, port, clean_env(MEMVAULT_OPERATOR_KEY=OPERATOR_KEY), capture=True)
    try:
        wait_healthy(base, proc)
        yield base
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def downloads() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="console-downloads-") as folder:
        yield Path(folder)


@pytest.fixture(scope="module")
def driver(downloads: Path) -> Iterator[Any]:
    _browser_or_skip()
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must never fetch a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.TemporaryDirectory(prefix="console-chromium-")
    options.add_argument(f"--user-data-dir={profile.name}")
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    browser = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    browser.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    browser.implicitly_wait(0)
    try:
        yield browser
    finally:
        browser.quit()
        profile.cleanup()


class Screens:
    """Saves a full-page PNG per page when MEMVAULT_SCREENSHOTS names a folder."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        folder = os.environ.get("MEMVAULT_SCREENSHOTS")
        self.folder = Path(folder) if folder else None
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)

    def shot(self, name: str) -> None:
        if self.folder is None:
            return
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        metrics = {"width": 1280, "height": min(int(height), 4000), "deviceScaleFactor": 1}
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride", {**metrics, "mobile": False}
        )
        try:
            self.driver.save_screenshot(str(self.folder / f"{name}.png"))
        finally:
            self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _wait(predicate: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def _downloaded(folder: Path, suffix: str) -> Path:
    def ready() -> Path | None:
        done = [p for p in folder.iterdir() if p.name.endswith(suffix)]
        return done[0] if done else None

    return Path(_wait(ready, f"a downloaded *{suffix}"))


def test_console_in_chromium(server: str, driver: Any, downloads: Path) -> None:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    screens = Screens(driver)

    def go(path: str) -> None:
        driver.get(f"{server}/console{path}")

    def text(selector: str) -> str:
        return str(driver.find_element(By.CSS_SELECTOR, selector).text)

    def fill(selector: str, value: str) -> None:
        box = driver.find_element(By.CSS_SELECTOR, selector)
        box.clear()
        box.send_keys(value)

    def click(selector: str) -> None:
        """Click a link or submit button and wait until the next page has loaded."""
        old = driver.find_element(By.TAG_NAME, "html")
        driver.find_element(By.CSS_SELECTOR, selector).click()

        def replaced() -> bool:
            try:
                old.tag_name  # noqa: B018 - raises once the old document is gone
            except WebDriverException:  # stale, or "node does not belong to the document"
                return True
            return False

        _wait(replaced, f"the page after clicking {selector}")
        _wait(
            lambda: driver.execute_script("return document.readyState") == "complete",
            "the page to load",
        )

    def sign_in(key: str) -> None:
        go("/login")
        fill("#api_key", key)
        click("#sign-in")
        _wait(lambda: driver.find_elements(By.ID, "who"), "the signed-in header")

    # Signed out: every page leads to the sign-in form.
    go("/users")
    assert driver.current_url.endswith("/console/login")
    screens.shot("login")

    # The operator creates the tenant; its first admin key is shown once.
    sign_in(OPERATOR_KEY)
    assert driver.current_url.endswith("/console/tenants")
    fill("#tenant_id", "acme")
    click("#create")
    admin_key = text("#created #secret")
    assert admin_key.startswith("mvk_acme.")
    click("#sign-out")

    # The tenant admin issues an agent key; the agent writes a note over REST.
    sign_in(admin_key)
    assert "tenant_admin · acme" in text("#who")
    go("/keys")
    fill("#user_id", "alice")
    fill("#agent_id", "planner")
    Select(driver.find_element(By.ID, "role")).select_by_value("agent")
    click("#issue")
    alice_key = text("#issued #secret")
    assert alice_key.startswith("mvk_acme.")
    screens.shot("keys")
    with httpx.Client(base_url=server, timeout=30) as rest:
        r = rest.post(
            "/v1/memories",
            headers={"Authorization": f"Bearer {alice_key}"},
            json={"text": "alice waters the fern on the balcony every week"},
        )
        assert r.status_code == 201, r.text
        bob_key = rest.post(
            "/v1/admin/keys",
            headers={"Authorization": f"Bearer {admin_key}"},
            json={"user_id": "bob", "agent_id": "helper", "role": "agent"},
        ).json()["api_key"]
        refused = rest.post(
            "/v1/memories",
            headers={"Authorization": f"Bearer {bob_key}"},
            json={"text": f"the deploy token is {GITHUB_TOKEN}"},
        )
        assert refused.status_code == 422, refused.text
        receipt_keys = rest.get("/v1/receipt-keys").json()["keys"]

    # Users and their note counts; never the note itself.
    go("/users")
    rows = {
        row.find_element(By.CSS_SELECTOR, "td").text: row.text
        for row in driver.find_elements(By.CSS_SELECTOR, "#users tbody tr")
    }
    assert rows["alice"].split()[1] == "1" and "fern" not in driver.page_source
    screens.shot("users")
    go("/users/alice")
    screens.shot("user-inventory")

    # Erase alice and watch the receipt arrive, verified on the server.
    click("#erase")
    verdict = _wait(lambda: driver.find_elements(By.ID, "verdict"), "the erasure receipt")
    assert verdict[0].text == "✓ verified", verdict[0].text
    assert "signature verifies" in text("#verdict-reason")
    screens.shot("erasure")
    driver.find_element(By.ID, "download-receipt").click()  # a download: no navigation
    receipt = json.loads(_downloaded(downloads, ".json").read_text())
    assert verify_receipt(receipt, receipt_keys).ok and receipt["receipt"]["verified"] is True
    go("/erasures")
    screens.shot("erasures")

    # Policy: PII actions and TTL defaults; the LLM policy is not built yet.
    go("/policy")
    driver.find_element(By.CSS_SELECTOR, 'input[name="pii_email"][value="refuse"]').click()
    fill("#ttl_memory", "90")
    click("#save-policy")
    assert "Policy saved" in text("#saved") and "Not available yet" in text("#llm")
    screens.shot("policy")

    go("/refusals")
    assert "1" in text("#refusals tbody")
    screens.shot("refusals")

    # A form posted without its CSRF token is refused, and nothing is issued.
    go("/keys")
    driver.execute_script("document.querySelector('#issue-key input[name=csrf]').remove()")
    fill("#user_id", "mallory")
    fill("#agent_id", "bot")
    click("#issue")
    error = _wait(lambda: driver.find_elements(By.ID, "error"), "the refusal page")
    assert "CSRF token" in error[0].text and "Error 403" in driver.title
    go("/keys")
    assert "mallory" not in driver.page_source

    # The audit log: chain verified on the page; the export verifies offline too.
    go("/audit")
    assert text("#chain") == "✓ chain verified"
    Select(driver.find_element(By.ID, "action")).select_by_value("erase.completed")
    click("#apply-filter")
    actions = {td.text for td in driver.find_elements(By.CSS_SELECTOR, "#events td:nth-child(4)")}
    assert actions == {"erase.completed"}
    go("/audit")
    screens.shot("audit")
    driver.find_element(By.ID, "export").click()  # a download: no navigation
    export = _downloaded(downloads, ".jsonl").read_text().splitlines()
    verdict_export = verify_audit_export(export, receipt_keys)
    assert verdict_export.ok, verdict_export.reason
    assert any('"action":"erase.completed"' in line for line in export)
    click("#sign-out")

    # The operator deletes a tenant and gets its verified receipt.
    sign_in(OPERATOR_KEY)
    fill("#tenant_id", "globex")
    click("#create")
    fill("#confirm-globex", "globex")
    click("#delete-globex")
    assert text("#deleted #verdict") == "✓ verified"
    screens.shot("tenants")
