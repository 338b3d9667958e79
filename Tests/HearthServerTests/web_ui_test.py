#!/usr/bin/env python3
"""Drives Hearth's web chat in headless Chromium against a running `hearth serve`, and checks
each step both on the page and through the server's API.

    web_ui_test.py BASE_URL SCREENSHOT_DIR [--pull NAME] [--api-key KEY] [--thoughts MODEL]
                   [--speech WAV --speech-text TEXT] [--no-speech WAV]

--pull NAME also pulls NAME from the Models page and deletes it again (the server must reach a
Hub that has it). --api-key KEY runs the API key checks instead of the chat ones, --thoughts
MODEL the checks of a reasoning model's folded thoughts. --speech WAV runs the speech input
checks (the server needs a speech model; TEXT is the SDK's transcription of WAV): the upload
button, dictation through Chromium's fake microphone playing WAV, and a denied microphone.
--no-speech WAV checks what the page says on a server without a speech model.

Exits 0 when every check passes; otherwise prints what failed, saves failure.png and the
browser's console, and exits 1. Every step saves a PNG in SCREENSHOT_DIR.
"""

import argparse
import json
import os
import re
import signal
import sys
import time
import urllib.request
import wave

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

# Every step waits for a state of the page, never for a time. Page steps are quick, but the
# machine may be busy with other test suites: the limits are for a page that never gets there.
UI_TIMEOUT = 60
ANSWER_TIMEOUT = 240
PULL_TIMEOUT = 120


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


class Server:
    """The server's API, read directly, to compare with what the page shows."""

    def __init__(self, base, key=None):
        self.base = base.rstrip("/")
        self.key = key

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
        return json.loads(text) if text else None

    def threads(self):
        return self.request("GET", "/v1/threads")["data"]

    def thread(self, thread_id):
        return self.request("GET", f"/v1/threads/{thread_id}")

    def messages(self, thread_id):
        return self.request("GET", f"/v1/threads/{thread_id}/messages")["data"]

    def storage(self):
        return self.request("GET", "/v1/storage")


def format_bytes(count):
    """The page's (and the hearth command line's) size format: binary units, one decimal."""
    units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
    if count < 1024:
        return f"{count} B"
    value = count / 1024
    unit = 0
    while value >= 1023.95 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    return f"{value:.1f} {units[unit]}"


class Page:
    """The browser and the few ways this test looks at the page."""

    def __init__(self, base, screenshots, arguments=()):
        options = Options()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,860",
                         "--disable-gpu", "--lang=en-US", *arguments):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
        self.driver.set_page_load_timeout(60)
        self.base = base.rstrip("/")
        self.screenshots = screenshots
        self.shots = 0
        self.started = time.monotonic()

    def quit(self):
        self.driver.quit()

    def log(self, message):
        print(f"[{time.monotonic() - self.started:6.1f}s] {message}", flush=True)

    def shot(self, name):
        self.shots += 1
        path = os.path.join(self.screenshots, f"{self.shots:02d}-{name}.png")
        self.driver.save_screenshot(path)

    def open(self, path="/"):
        self.driver.get(self.base + path)
        self.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true", "the page to start")

    def wait(self, condition, what, timeout=UI_TIMEOUT):
        """Waits until `condition(driver)` is truthy and returns it; a stale element (the page
        re-rendered under the check) just means "look again"."""
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1,
                                 ignored_exceptions=[StaleElementReferenceException]).until(condition)
        except TimeoutException:
            raise CheckFailed(f"timed out after {timeout}s waiting for {what}") from None

    def find(self, testid, within=None):
        return (within or self.driver).find_element(By.CSS_SELECTOR, f"[data-testid='{testid}']")

    def find_all(self, selector, within=None):
        return (within or self.driver).find_elements(By.CSS_SELECTOR, selector)

    def visible(self, testid):
        elements = self.find_all(f"[data-testid='{testid}']")
        return bool(elements) and elements[0].is_displayed()

    def click(self, testid, within=None):
        element = self.wait(lambda d: self._clickable(testid, within), f"{testid} to be clickable")
        element.click()

    def _clickable(self, testid, within):
        for element in self.find_all(f"[data-testid='{testid}']", within):
            if element.is_displayed() and element.is_enabled():
                return element
        return None

    def text(self, element):
        """The exact text, as textContent has it (Selenium's .text collapses whitespace)."""
        return element.get_property("textContent")

    def title(self):
        return self.find("thread-title").text

    def selected_thread(self):
        items = self.find_all("[data-testid='thread-item'].selected")
        return items[0] if items else None

    def thread_names(self):
        return [self.text(item) for item in self.find_all("[data-testid='thread-item'] [data-testid='thread-name']")]

    def messages(self, role=None):
        selector = "#message-list [data-testid='message']"
        if role:
            selector += f"[data-role='{role}']"
        return self.find_all(selector)

    def done_answer(self, exclude_id=None):
        """The last answer, once it is complete (stored, with its speed shown)."""
        answers = self.messages("assistant")
        if not answers:
            return None
        last = answers[-1]
        if last.get_attribute("data-state") != "done" or last.get_attribute("data-message-id") in (None, exclude_id):
            return None
        return last if self.find_all("[data-testid='tokens-per-second']", last) else None

    def browser_log(self):
        try:
            return "\n".join(f"{entry['level']}: {entry['message']}" for entry in self.driver.get_log("browser"))
        except Exception as error:  # The log is help for a failure; its absence must not hide it.
            return f"(no browser log: {error})"


def send(page, text):
    # The composer takes a question once no answer is streaming.
    page.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-streaming") != "true", "no answer streaming")
    prompt = page.find("prompt")
    prompt.click()
    prompt.send_keys(text)
    prompt.send_keys(Keys.ENTER)


def chat_checks(page, server, pull_name):
    page.open()
    check(page.visible("empty-state"), "the empty state should show before any chat exists")
    check("Ask anything…" in page.find("empty-state").text, "the empty state should say 'Ask anything…'")
    page.shot("empty")

    page.log("create a chat")
    page.click("new-thread")
    title = page.wait(lambda d: re.fullmatch(r"Chat \d+", page.title()) and page.title(), "the header to show 'Chat N'")
    check(page.selected_thread() is not None and page.text(page.find("thread-name", page.selected_thread())) == title,
          f"the selected thread in the list should be {title!r}")
    threads = server.threads()
    check(len(threads) == 1 and threads[0]["name"] == title, f"the server should have one thread named {title!r}: {threads}")
    thread_id = threads[0]["id"]
    check(page.selected_thread().get_attribute("data-thread-id") == thread_id, "the list item should carry the thread's id")
    page.shot("new-chat")

    page.log("rename it")
    new_name = "Trip to Lisbon ✈"
    page.click("rename-thread", page.selected_thread())
    field = page.wait(lambda d: page._clickable("rename-input", None), "the rename field")
    check(field.get_attribute("value") == title, "the rename field should start with the current name")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(new_name)
    page.shot("renaming")
    field.send_keys(Keys.ENTER)
    page.wait(lambda d: page.title() == new_name, "the header to show the new name")
    page.wait(lambda d: page.thread_names() == [new_name], "the list to show the new name")
    check(server.thread(thread_id)["name"] == new_name, "the server should store the new name")
    page.shot("renamed")

    page.log("settings: style preset and system prompt")
    system_prompt = "You are a friendly assistant."
    page.click("open-settings")
    page.wait(lambda d: page.visible("settings-dialog"), "the settings dialog")
    model_options = [option.get_attribute("value") for option in page.find_all("[data-testid='settings-model'] option")]
    check("smollm2" in model_options and "all-minilm" not in model_options,
          f"the model choices should list the language models only: {model_options}")
    preset_options = [option.get_attribute("value") for option in page.find_all("[data-testid='settings-preset'] option")]
    check({"creative", "balanced", "precise", "code"} <= set(preset_options), f"every preset should be offered: {preset_options}")
    page.find("settings-preset").find_element(By.CSS_SELECTOR, "option[value='precise']").click()
    page.find("settings-model").find_element(By.CSS_SELECTOR, "option[value='smollm2']").click()
    page.find("settings-system").send_keys(system_prompt)
    page.shot("settings")
    page.click("settings-save")
    page.wait(lambda d: not page.visible("settings-dialog"), "the settings dialog to close")
    stored = server.thread(thread_id)
    check(stored["preset"] == "precise" and stored["model"] == "smollm2" and stored["system_prompt"] == system_prompt,
          f"the server should store the settings: {stored}")
    check("precise" in page.find("thread-model").text, "the header should show the style")
    # Shown again as stored when the dialog reopens.
    page.click("open-settings")
    page.wait(lambda d: page.visible("settings-dialog"), "the settings dialog")
    check(page.find("settings-preset").get_attribute("value") == "precise", "the dialog should show the stored preset")
    check(page.find("settings-system").get_attribute("value") == system_prompt, "the dialog should show the stored prompt")
    page.click("settings-cancel")
    page.wait(lambda d: not page.visible("settings-dialog"), "the settings dialog to close")

    page.log("Shift+Enter adds a line, it does not send")
    prompt = page.find("prompt")
    prompt.click()
    prompt.send_keys("first line")
    prompt.send_keys(Keys.SHIFT, Keys.ENTER)
    prompt.send_keys("second line")
    check(prompt.get_attribute("value") == "first line\nsecond line", f"Shift+Enter should add a line: {prompt.get_attribute('value')!r}")
    check(not page.messages(), "Shift+Enter should not send")
    prompt.send_keys(Keys.CONTROL, "a")
    prompt.send_keys(Keys.DELETE)

    page.log("send a message; the answer streams in")
    question = "Say hi in three words."
    send(page, question)
    page.wait(lambda d: page.messages("user") and page.text(page.messages("user")[-1]).startswith(question), "the question's bubble")
    check(page.find("prompt").get_attribute("value") == "", "the composer should empty once sent")
    answer = page.wait(lambda d: page.done_answer(), "the answer to complete", timeout=ANSWER_TIMEOUT)
    page.shot("answered")
    stored = server.messages(thread_id)
    check([m["role"] for m in stored] == ["user", "assistant"], f"the server should store a question and an answer: {stored}")
    check(stored[0]["content"] == question, "the stored question should be what was typed")
    bubble = page.find("bubble", answer)
    check(page.text(bubble) == stored[1]["content"],
          f"the streamed answer should equal the stored one:\npage:   {page.text(bubble)!r}\nserver: {stored[1]['content']!r}")
    check(answer.get_attribute("data-message-id") == str(stored[1]["id"]), "the answer should carry its stored id")
    speed = page.find("tokens-per-second", answer).text
    check(f"{stored[1]['tokens_per_second']:.1f} tokens/s" in speed, f"the answer should show its speed: {speed!r}")
    page.wait(lambda d: page.visible("send") and not page.visible("stop"), "Send to be back once the answer is done")
    check(not page.visible("empty-state"), "the empty state should be gone")

    page.log("regenerate the answer")
    first_id = answer.get_attribute("data-message-id")
    page.click("regenerate", answer)
    answer = page.wait(lambda d: page.done_answer(exclude_id=first_id), "the new answer to complete", timeout=ANSWER_TIMEOUT)
    stored = server.messages(thread_id)
    answers = [m for m in stored if m["role"] == "assistant"]
    check(len(answers) == 1, f"regenerating should leave one answer: {stored}")
    check(str(answers[0]["id"]) == answer.get_attribute("data-message-id") and str(answers[0]["id"]) != first_id,
          "the new answer should replace the old one")
    check(page.text(page.find("bubble", answer)) == answers[0]["content"], "the regenerated answer should equal the stored one")
    check(len(page.messages("assistant")) == 1, "the page should show one answer")
    answer_id = answer.get_attribute("data-message-id")
    page.shot("regenerated")

    page.log("a long answer, stopped")
    story = "Write a very long story about a dragon who learns to bake bread. Use many chapters."
    send(page, story)
    page.wait(lambda d: page.visible("stop"), "the Stop button")
    streaming = page.wait(lambda d: [m for m in page.messages("assistant")
                                     if m.get_attribute("data-state") == "streaming" and page.text(m).strip()],
                          "the first words of the story", timeout=ANSWER_TIMEOUT)[0]
    page.shot("streaming")
    check(streaming.get_attribute("data-state") == "streaming",
          "the story finished before Stop could be pressed; ask for a longer one")
    page.click("stop")
    page.wait(lambda d: not page.find_all("[data-state='streaming']"), "the partial answer to go")
    page.wait(lambda d: page.visible("send") and not page.visible("stop"), "Send to come back")
    page.wait(lambda d: page.visible("unanswered"), "the unanswered notice")
    check(len(page.messages("assistant")) == 1, "the stopped answer should leave no bubble")
    stored = server.messages(thread_id)
    check([m["role"] for m in stored] == ["user", "assistant", "user"] and stored[2]["content"] == story,
          f"the server should keep the question but no part of the stopped answer: {stored}")
    check(str(stored[1]["id"]) == answer_id, "the earlier answer should be untouched")
    check(page.messages("assistant")[0].get_attribute("data-message-id") == answer_id, "the page should still show it")
    page.shot("stopped")

    page.log("an error answer, with Retry, in a second chat")
    page.click("new-thread")
    second_title = page.wait(lambda d: page.title() != new_name and re.fullmatch(r"Chat \d+", page.title()) and page.title(),
                             "the second chat")
    check(int(second_title.split()[1]) == int(title.split()[1]) + 1, f"chat names should count up: {title} then {second_title}")
    second_id = page.selected_thread().get_attribute("data-thread-id")
    # Longer than the model's context: the server refuses it before answering.
    page.driver.execute_script(
        "const p = document.getElementById('prompt'); p.value = arguments[0]; p.dispatchEvent(new Event('input'));",
        "tell me about this: " + "lorem ipsum dolor sit amet " * 600)
    page.click("send")
    error = page.wait(lambda d: page._clickable("error-message", None), "the error bubble", timeout=ANSWER_TIMEOUT)
    check("context" in error.text.lower(), f"the error should say the context is too small: {error.text!r}")
    check(not page.messages("assistant"), "a failed answer should leave no answer bubble")
    page.shot("error")
    page.click("retry", error)
    page.wait(lambda d: page._clickable("error-message", None) and not _is(error, page._clickable("error-message", None)),
              "the retried answer's error", timeout=ANSWER_TIMEOUT)
    stored = server.messages(second_id)
    check([m["role"] for m in stored] == ["user"], f"a retry of a stored question should not store it twice: {stored}")

    page.log("delete the second chat, with a confirmation")
    page.click("delete-thread", page.selected_thread())
    page.wait(lambda d: page.visible("confirm-dialog"), "the confirmation")
    page.shot("confirm-delete")
    page.click("confirm-cancel")
    page.wait(lambda d: not page.visible("confirm-dialog"), "the confirmation to close")
    check(any(t["id"] == second_id for t in server.threads()), "Cancel should keep the chat")
    page.click("delete-thread", page.selected_thread())
    page.wait(lambda d: page.visible("confirm-dialog"), "the confirmation")
    page.click("confirm-ok")
    page.wait(lambda d: page.thread_names() == [new_name], "the list to lose the deleted chat")
    page.wait(lambda d: page.title() == new_name, "the first chat to open again")
    check([t["id"] for t in server.threads()] == [thread_id], "the server should have deleted the chat")
    page.wait(lambda d: len(page.messages()) == 3, "the first chat's messages")

    page.log("clear all messages")
    names_before = [t["name"] for t in server.threads()]
    page.click("clear-all")
    page.wait(lambda d: page.visible("confirm-dialog"), "the confirmation")
    page.click("confirm-ok")
    page.wait(lambda d: not page.messages() and page.visible("empty-state"), "the messages to go")
    check(all(not server.messages(t["id"]) for t in server.threads()), "the server should have no messages left")
    check([t["name"] for t in server.threads()] == names_before and page.thread_names() == names_before,
          "clearing messages should keep the chats and their names")
    check(page.title() == new_name, "the header should keep the chat's name")
    page.shot("cleared")

    page.log("the Models page")
    page.click("open-models")
    row = page.wait(lambda d: page.find_all("[data-testid='model-row'][data-model='smollm2']"), "smollm2 on the Models page")[0]
    storage = server.storage()
    listed = {model["name"]: model for model in storage["models"]}
    check("smollm2" in listed and listed["smollm2"]["size"] > 0, f"the server should list smollm2: {storage}")
    size = page.find("model-size", row).text
    check(size == format_bytes(listed["smollm2"]["size"]), f"smollm2's size should show as {format_bytes(listed['smollm2']['size'])}, not {size!r}")
    check("MiB" in size, f"smollm2 should be tens of MiB: {size!r}")
    check(page.find("storage-total").text == format_bytes(storage["total_bytes"]),
          f"the storage total should show {format_bytes(storage['total_bytes'])}")
    check(page.find("storage-directory").text == storage["cache_directory"], "the cache directory should show")
    page.shot("models")

    if pull_name:
        page.log(f"pull {pull_name} with a progress bar, then delete it")
        total_before = storage["total_bytes"]
        page.find("pull-name").send_keys(pull_name)
        page.click("pull-button")
        page.wait(lambda d: page.visible("pull-progress-box"), "the progress bar")
        try:
            page.wait(lambda d: float(page.find("pull-progress").get_property("value") or 0) > 0
                      and page.find("pull-progress-box").get_attribute("data-state") == "pulling", "progress", timeout=PULL_TIMEOUT)
            page.shot("pulling")
        except CheckFailed:
            pass  # A fast pull may finish between two looks; the end state is what counts.
        page.wait(lambda d: page.find("pull-progress-box").get_attribute("data-state") != "pulling", "the pull to end", timeout=PULL_TIMEOUT)
        check(page.find("pull-progress-box").get_attribute("data-state") == "done", f"the pull should succeed: {page.find('pull-status').text}")
        pulled = page.wait(lambda d: page.find_all(f"[data-testid='model-row'][data-model='{pull_name}']"), "the pulled model's row")[0]
        storage = server.storage()
        check(storage["total_bytes"] > total_before, "the cache should grow by the pulled model")
        page.wait(lambda d: page.find("storage-total").text == format_bytes(storage["total_bytes"]), "the new storage total")
        listed = {model["name"]: model for model in storage["models"]}
        check(page.find("model-size", pulled).text == format_bytes(listed[pull_name]["size"]), "the pulled model's size should show")
        served = page.find_all("[data-testid='model-row'][data-model='smollm2']")[0]
        check(not page.find_all("[data-testid='delete-model']", served), "a model served from a file should not offer delete")
        check(page.find_all("[data-testid='delete-model']", pulled), "a pulled model should offer delete")
        page.shot("pulled")
        page.click("delete-model", pulled)
        page.wait(lambda d: page.visible("confirm-dialog"), "the confirmation")
        page.click("confirm-ok")
        page.wait(lambda d: not page.find_all(f"[data-testid='model-row'][data-model='{pull_name}']"), "the deleted model's row to go")
        check(pull_name not in {m["name"] for m in server.storage()["models"]}, "the server should have deleted the model")
        page.wait(lambda d: page.find("storage-total").text == format_bytes(server.storage()["total_bytes"]), "the storage total")

    page.log("dark mode")
    page.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    page.shot("models-dark")
    page.click("back-to-chat")
    page.wait(lambda d: page.visible("composer"), "the chat")
    send(page, "Say hi in three words.")
    page.wait(lambda d: page.done_answer(), "the answer to complete", timeout=ANSWER_TIMEOUT)
    page.shot("chat-dark")

    page.log("a reload shows the same chat")
    page.open(f"/#/chat/{thread_id}")
    page.wait(lambda d: page.title() == new_name and len(page.messages()) == 2, "the chat after a reload")


def _is(a, b):
    try:
        return a.id == b.id
    except StaleElementReferenceException:
        return False


def api_key_checks(page, server, key):
    page.driver.get(page.base + "/")
    page.wait(lambda d: page.visible("key-dialog"), "the API key dialog")
    page.shot("key-dialog")
    field = page.find("key-input")
    field.send_keys("not-the-key")
    field.send_keys(Keys.ENTER)
    page.wait(lambda d: page.visible("key-dialog") and page.visible("key-error"), "the wrong key to be refused")
    page.shot("key-refused")
    field = page.find("key-input")
    field.send_keys(key)
    field.send_keys(Keys.ENTER)
    page.wait(lambda d: not page.visible("key-dialog"), "the dialog to close")
    page.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true", "the page to start")
    page.click("new-thread")
    title = page.wait(lambda d: re.fullmatch(r"Chat \d+", page.title()) and page.title(), "a new chat")
    check([t["name"] for t in server.threads()] == [title], "the chat should be created with the key")
    check(page.driver.execute_script("return localStorage.getItem('hearth.apiKey')") == key, "the key should be kept")
    page.open()
    check(not page.visible("key-dialog"), "a kept key should not be asked for again")
    page.wait(lambda d: page.thread_names() == [title], "the chats after a reload")
    page.shot("key-accepted")


def thoughts_checks(page, server, model):
    page.open()
    page.log("a chat with a reasoning model")
    page.click("new-thread")
    page.wait(lambda d: re.fullmatch(r"Chat \d+", page.title()), "the header to show 'Chat N'")
    thread_id = server.threads()[0]["id"]
    page.click("open-settings")
    page.wait(lambda d: page.visible("settings-dialog"), "the settings dialog")
    page.find("settings-preset").find_element(By.CSS_SELECTOR, "option[value='precise']").click()
    page.find("settings-model").find_element(By.CSS_SELECTOR, f"option[value='{model}']").click()
    page.click("settings-save")
    page.wait(lambda d: not page.visible("settings-dialog"), "the settings dialog to close")
    check(server.thread(thread_id)["model"] == model, "the thread should use the reasoning model")

    page.log("its thoughts stream into a folded block above the answer")
    send(page, "Name a vegetable.")
    answer = page.wait(lambda d: page.done_answer(), "the answer to complete", timeout=ANSWER_TIMEOUT)
    page.shot("thoughts-folded")
    stored = server.messages(thread_id)
    check([m["role"] for m in stored] == ["user", "assistant"], f"the server should store a question and an answer: {stored}")
    thoughts = page.find("thoughts", answer)
    bubble = page.find("bubble", answer)
    check(thoughts.tag_name == "details" and thoughts.get_attribute("open") is None, "the thoughts should be a folded <details>")
    check(page.driver.execute_script("return arguments[0].compareDocumentPosition(arguments[1]) & 4", thoughts, bubble) == 4,
          "the thoughts should come before the answer")
    thought_text = page.find("thoughts-text", thoughts).get_attribute("textContent")
    check(thought_text.strip() != "", "the thoughts should have text")
    check(page.text(page.find("thoughts-summary", thoughts)) == "Thoughts" and thoughts.get_attribute("data-state") == "done",
          "the summary should say the thoughts are complete")
    check(page.text(bubble) == stored[1]["content"],
          f"the answer should equal the stored one:\npage:   {page.text(bubble)!r}\nserver: {stored[1]['content']!r}")
    for text in (thought_text, page.text(bubble)):
        check("<think>" not in text and "</think>" not in text, f"no tag should show: {text!r}")

    page.log("unfold them")
    page.click("thoughts-summary", thoughts)
    page.wait(lambda d: thoughts.get_attribute("open") is not None and page.find("thoughts-text", thoughts).is_displayed(),
              "the thoughts to unfold")
    check(page.text(page.find("thoughts-text", thoughts)) == thought_text.strip(), "the unfolded thoughts should show their text")
    page.shot("thoughts-open")

    page.log("the thoughts are stored with the answer and come back folded after a reload")
    check(stored[1].get("reasoning") == thought_text, f"the server should store the thoughts as streamed: {stored[1]}")
    page.driver.refresh()
    answer = page.wait(lambda d: page.done_answer(), "the stored answer after a reload")
    thoughts = page.find("thoughts", answer)
    check(thoughts.get_attribute("open") is None and page.find("thoughts-text", thoughts).get_attribute("textContent") == thought_text,
          "the stored thoughts should show folded above the answer")
    check(page.text(page.find("bubble", answer)) == stored[1]["content"], "the stored answer should show after a reload")
    page.shot("thoughts-reloaded")


def prompt_value(page):
    return page.find("prompt").get_attribute("value")


def speech_status(page):
    """The speech line's state and text, or None while it is hidden."""
    status = page.find("speech-status")
    return (status.get_attribute("data-state"), page.text(status)) if status.is_displayed() else None


def words(text):
    return re.findall(r"[a-z']+", text.lower())


def speech_checks(page, clip, expected):
    page.open()
    check(page.visible("upload-audio") and page.visible("record"), "the upload and microphone buttons should show")
    check(page.find("record").get_attribute("aria-pressed") == "false", "the microphone should start off")

    page.log("the upload button opens the file chooser; the chosen WAV's text lands in the message box")
    # Headless Chromium has no file dialog to click through: the chooser is intercepted, and the
    # file is given to the input the button opened, as a person's choice would be.
    page.driver.execute_cdp_cmd("Page.setInterceptFileChooserDialog", {"enabled": True})
    page.driver.execute_script("window.chooserOpened = false; document.getElementById('audio-file')"
                               ".addEventListener('click', () => { window.chooserOpened = true; });")
    page.click("upload-audio")
    page.wait(lambda d: d.execute_script("return window.chooserOpened"), "the upload button to open the file chooser")
    page.find("audio-file").send_keys(clip)
    page.wait(lambda d: prompt_value(page), "the transcription in the message box", timeout=ANSWER_TIMEOUT)
    check(prompt_value(page) == expected, f"the message box should hold the SDK's text:\npage: {prompt_value(page)!r}\nSDK:  {expected!r}")
    check(speech_status(page) is None, f"no message should remain: {speech_status(page)}")
    check(not page.messages(), "the text should wait in the message box, not be sent")
    check(page.driver.switch_to.active_element == page.find("prompt"), "the message box should have the focus")
    page.shot("uploaded")

    page.log("dictation with Chromium's fake microphone, which plays the clip once")
    prompt = page.find("prompt")
    prompt.send_keys(Keys.CONTROL, "a")
    prompt.send_keys(Keys.DELETE)
    prompt.send_keys("Typed first.")
    with wave.open(clip) as audio:
        seconds = audio.getnframes() / audio.getframerate()
    page.click("record")
    page.wait(lambda d: page.find("record").get_attribute("aria-pressed") == "true", "the recording to start")
    page.wait(lambda d: speech_status(page) and speech_status(page)[0] == "recording", "the recording notice")
    check(page.find("upload-audio").get_attribute("disabled") is not None, "upload should wait while recording")
    # The page's own clock, shown beside the microphone, says when the whole clip has played.
    page.wait(lambda d: int(page.find("record-time").get_attribute("data-seconds")) >= seconds + 1,
              f"{seconds + 1:.0f} seconds of recording", timeout=UI_TIMEOUT + seconds)
    page.shot("recording")
    page.click("record")
    page.wait(lambda d: prompt_value(page) != "Typed first.", "the dictation in the message box", timeout=ANSWER_TIMEOUT)
    value = prompt_value(page)
    check(value.startswith("Typed first. "), f"dictation should continue what was typed: {value!r}")
    heard = set(words(value[len("Typed first. "):]))
    said = words(expected)
    overlap = sum(word in heard for word in said) / len(said)
    check(overlap >= 0.7, f"the dictation should hold the clip's words ({overlap:.0%} of them): {value!r} vs {expected!r}")
    check(page.find("record").get_attribute("aria-pressed") == "false" and speech_status(page) is None,
          f"the microphone should be off again, with no message: {speech_status(page)}")
    page.shot("dictated")


def denied_checks(page):
    page.open()
    page.log("a microphone the browser refuses")
    page.driver.execute_cdp_cmd("Browser.setPermission", {"origin": page.base, "permission": {"name": "microphone"},
                                                          "setting": "denied"})
    page.click("record")
    page.wait(lambda d: speech_status(page) and speech_status(page)[0] == "error", "the refusal to show")
    state, message = speech_status(page)
    check("denied" in message and "upload" in message, f"the message should say the microphone was denied: {message!r}")
    check(page.find("record").get_attribute("aria-pressed") == "false", "nothing should be recording")
    check(page.find("speech-status").get_attribute("role") == "alert", "the refusal should be announced")
    page.shot("microphone-denied")


def no_speech_checks(page, clip):
    page.open()
    page.log("the microphone on a server without a speech model")
    page.click("record")
    page.wait(lambda d: speech_status(page) and speech_status(page)[0] == "error", "the message")
    message = speech_status(page)[1]
    check("--speech-model" in message, f"the message should say how to start the server with a speech model: {message!r}")
    check(page.find("record").get_attribute("aria-pressed") == "false", "nothing should be recording")
    check("--speech-model" in page.find("record").get_attribute("title"), "the button's tooltip should say so too")
    page.shot("no-speech-model")

    page.log("a file sent anyway gets the server's answer")
    page.driver.execute_script("document.getElementById('speech-status').hidden = true;")
    page.find("audio-file").send_keys(clip)
    page.wait(lambda d: speech_status(page) and speech_status(page)[0] == "error", "the server's refusal")
    message = speech_status(page)[1]
    check("--speech-model" in message, f"the server's message should show: {message!r}")
    check(prompt_value(page) == "", "nothing should reach the message box")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("screenshots")
    parser.add_argument("--pull")
    parser.add_argument("--api-key")
    parser.add_argument("--thoughts")
    parser.add_argument("--speech")
    parser.add_argument("--speech-text")
    parser.add_argument("--no-speech")
    arguments = parser.parse_args()
    os.makedirs(arguments.screenshots, exist_ok=True)
    # A test runner that gives up sends SIGTERM: close the browser rather than leave it behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    browser_arguments = []
    if arguments.speech:
        # A microphone that grants itself and plays the clip once (%noloop), then silence.
        browser_arguments = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                             f"--use-file-for-fake-audio-capture={os.path.abspath(arguments.speech)}%noloop"]
    page = Page(arguments.base, arguments.screenshots, browser_arguments)
    try:
        if arguments.speech:
            speech_checks(page, os.path.abspath(arguments.speech), arguments.speech_text)
            # A browser of its own, whose fake device is there but whose permission is refused.
            page.quit()
            page = Page(arguments.base, arguments.screenshots, ["--use-fake-device-for-media-stream"])
            denied_checks(page)
        elif arguments.no_speech:
            no_speech_checks(page, os.path.abspath(arguments.no_speech))
        elif arguments.api_key:
            api_key_checks(page, Server(arguments.base, arguments.api_key), arguments.api_key)
        elif arguments.thoughts:
            thoughts_checks(page, Server(arguments.base), arguments.thoughts)
        else:
            chat_checks(page, Server(arguments.base), arguments.pull)
        page.log(f"all checks passed; {page.shots} screenshots in {arguments.screenshots}")
        return 0
    except Exception as error:
        page.log(f"FAILED: {type(error).__name__}: {error}")
        try:
            page.driver.save_screenshot(os.path.join(arguments.screenshots, "failure.png"))
        except Exception:
            pass
        print("browser console:\n" + page.browser_log(), flush=True)
        if not isinstance(error, CheckFailed):
            raise
        return 1
    finally:
        page.quit()


if __name__ == "__main__":
    sys.exit(main())
