#!/usr/bin/python3
"""Drives the chat page of `submoe serve` in headless Chromium (Debian's chromium,
chromium-driver and python3-selenium): loads GET /, sets the settings, types a
message, sends it with Enter and waits until an answer has streamed into the
page with its tokens/s line. Saves a screenshot. Exits 0 on success; on failure
prints what the page showed (and still saves the screenshot).

  usage: chat_page_browser.py --url URL --screenshot PNG [--timeout 120]
"""
import argparse
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    opts = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1000,800", "--no-first-run", "--disable-extensions"):
        opts.add_argument(flag)
    opts.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    problem = None
    try:
        driver.set_page_load_timeout(a.timeout)
        driver.get(a.url + "/")
        deadline = time.monotonic() + a.timeout

        def wait_for(what, predicate):
            while time.monotonic() < deadline:
                v = predicate()
                if v:
                    return v
                time.sleep(0.02)
            raise TimeoutError(what)

        wait_for("the model name in the header",
                 lambda: "connecting" not in driver.find_element(By.ID, "model").text)
        model = driver.find_element(By.ID, "model").text
        if "unavailable" in model:
            raise RuntimeError("header: " + model)
        driver.find_element(By.ID, "settings").click()
        for field, value in (("temperature", "0"), ("max_tokens", "48")):
            e = driver.find_element(By.ID, field)
            e.clear()
            e.send_keys(value)
        box = driver.find_element(By.ID, "input")
        box.send_keys("Good morrow, what news?")
        box.send_keys(Keys.ENTER)
        wait_for("the user's message in the log",
                 lambda: driver.find_elements(By.CSS_SELECTOR, "#log .msg.user"))
        user = driver.find_element(By.CSS_SELECTOR, "#log .msg.user").text
        if user != "Good morrow, what news?":
            raise RuntimeError("user bubble shows " + repr(user))
        # Streaming: text appears in the answer before the request has finished.
        saw_partial = False
        def answered():
            nonlocal saw_partial
            bubbles = driver.find_elements(By.CSS_SELECTOR, "#log .msg.assistant")
            if not bubbles:
                return None
            metas = bubbles[-1].find_elements(By.CSS_SELECTOR, ".meta")
            text = bubbles[-1].find_element(By.CSS_SELECTOR, ".text").text
            if text and not metas:
                saw_partial = True
            return (text, metas[0].text) if metas else None
        text, meta = wait_for("the answer and its tokens/s line", answered)
        if "error" in driver.find_element(By.CSS_SELECTOR, "#log .msg.assistant").get_attribute("class"):
            raise RuntimeError("the answer is an error: " + text)
        if not text.strip():
            raise RuntimeError("empty answer; meta: " + meta)
        if "tokens/s" not in meta or "expert" not in meta:
            raise RuntimeError("meta line lacks tokens/s or the expert cache: " + meta)
        status = driver.find_element(By.ID, "status").text
        reads = int(driver.find_element(By.CSS_SELECTOR, "#log .msg.assistant").get_attribute("data-reads") or 0)
        if reads < 2:
            raise RuntimeError(f"the answer arrived in {reads} network read(s): not streamed")
        print(f"model: {model}\nanswer: {text!r}\nmeta: {meta}\nstatus: {status}\n"
              f"streamed: {reads} reads brought text; text seen before the end: {saw_partial}")
    except Exception as e:  # report what the page showed
        problem = f"{type(e).__name__}: {e}"
        try:
            print("page log:", driver.find_element(By.ID, "log").text)
            print("status:", driver.find_element(By.ID, "status").text)
            for entry in driver.get_log("browser"):
                print("console:", entry)
        except Exception:
            pass
    finally:
        driver.save_screenshot(a.screenshot)
        driver.quit()
    if problem:
        print("FAIL", problem)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
