#!/usr/bin/env python3
"""Drives Hearth's web chat in headless Chromium against a running `hearth serve`, and checks
each step both on the page and through the server's API.

    web_ui_test.py BASE_URL SCREENSHOT_DIR [--pull NAME] [--api-key KEY] [--thoughts MODEL]
                   [--speech WAV --speech-text TEXT] [--no-speech WAV]
                   [--markdown] [--edit] [--tools] [--mobile]

--pull NAME also pulls NAME from the Models page and deletes it again (the server must reach a
Hub that has it). --api-key KEY runs the API key checks instead of the chat ones, --thoughts
MODEL the checks of a reasoning model's folded thoughts. --speech WAV runs the speech input
checks (the server needs a speech model; TEXT is the SDK's transcription of WAV): the upload
button, dictation through Chromium's fake microphone playing WAV, and a denied microphone.
--no-speech WAV checks what the page says on a server without a speech model.
--markdown checks how answers are rendered (Markdown, code blocks and Copy, streaming) and that
answers full of HTML and javascript: links run nothing; --edit checks editing a question;
--tools checks copying an answer, search, export and import and the keyboard shortcuts;
--mobile checks the layout of a phone-sized window. Content that must be exact is loaded
through the server's import route.

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
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.action_chains import ActionChains
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

    def import_thread(self, export):
        """A thread with the given messages, through the documented import route."""
        return self.request("POST", "/v1/threads/import", export)


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

    def source(self, bubble):
        """The text a bubble shows as it was written: for an answer, its Markdown before rendering."""
        return self.driver.execute_script("return arguments[0].source", bubble)

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
    check(page.source(bubble) == stored[1]["content"],
          f"the streamed answer should equal the stored one:\npage:   {page.source(bubble)!r}\nserver: {stored[1]['content']!r}")
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
    check(page.source(page.find("bubble", answer)) == answers[0]["content"], "the regenerated answer should equal the stored one")
    check(len(page.messages("assistant")) == 1, "the page should show one answer")
    answer_id = answer.get_attribute("data-message-id")
    page.shot("regenerated")

    page.log("a long answer, stopped")
    story = "Write a very long story about a dragon who learns to bake bread. Use many chapters."
    send(page, story)
    page.wait(lambda d: page.visible("stop"), "the Stop button")
    streaming = page.wait(lambda d: [m for m in page.messages("assistant") if m.get_attribute("data-state") == "streaming"],
                          "the story's answer to begin", timeout=ANSWER_TIMEOUT)[0]
    # Stop at once, as soon as the answer is under way: waiting for its first words, or a
    # screenshot, gives a fast server the time to finish the story.
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
    check(page.source(bubble) == stored[1]["content"],
          f"the answer should equal the stored one:\npage:   {page.source(bubble)!r}\nserver: {stored[1]['content']!r}")
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
    check(page.source(page.find("bubble", answer)) == stored[1]["content"], "the stored answer should show after a reload")
    page.shot("thoughts-reloaded")


# ---------------------------------------------------------------------------------------------
# Markdown, and answers that try to run code

RICH_ANSWER = """# Baking bread

Bread needs **four things**, *patience* above all, and ~~a machine~~ nothing else. Keep the \
`starter` warm; name files like snake_case_name.txt.
A second line of the same paragraph.

## Steps

1. Mix the flour and water
2. Add the starter
   - 100 g, *active*
   - 10 g of salt
3. Bake at 230 °C

- Tools
  - a bowl
- Time

> Good bread takes time.
> Really.

| Ingredient | Grams | Share |
|:-----------|------:|:-----:|
| Flour      | 500   | 100 % |
| Water `H2O`| 350   | 70 %  |

---

### Code

```python
def bake(minutes: int) -> str:
    # Keep an eye on the crust.
    return f"baked for {minutes}" if minutes > 40 else None
```

```javascript
const loaf = { grams: 900 }; // one loaf
```

```
plain text block
```

Energy: $E = mc^2$, a sum $a_1 * b_2 * c_3$, and a display:

$$
\\int_0^1 x^2 \\, dx = \\frac{1}{3}
$$

See [the guide](https://example.com/bread?x=1&y=2) or https://example.org/flour."""

PYTHON_CODE = '''def bake(minutes: int) -> str:
    # Keep an eye on the crust.
    return f"baked for {minutes}" if minutes > 40 else None'''

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "<script>window.__xss = 'script'</script>",
    "<img src=x onerror=\"window.__xss = 'img'\">",
    "<svg onload=\"window.__xss = 'svg'\"></svg>",
    "<iframe src=\"javascript:window.__xss = 'iframe'\"></iframe>",
    "[click me](javascript:window.__xss='link')",
    "[mixed case](JaVaScRiPt:window.__xss='case')",
    "![picture](javascript:window.__xss='image')",
    "[data](data:text/html,<script>window.__xss='data'</script>)",
    "<a href=\"javascript:window.__xss='anchor'\">anchor</a>",
]
HOSTILE_ANSWER = "\n\n".join([
    "Here you are:",
    *HOSTILE,
    "`<img src=x onerror=\"window.__xss = 'code'\">`",
    "| a | b |\n|---|---|\n| <img src=x onerror=\"window.__xss = 'table'\"> | [t](javascript:window.__xss='cell') |",
    "# <script>window.__xss = 'heading'</script>",
    "```html\n</code></pre><img src=x onerror=\"window.__xss = 'block'\"><script>window.__xss = 'block'</script>\n```",
])
HOSTILE_NAME = "<img src=x onerror=\"window.__xss = 'name'\">"


def no_alert(page):
    try:
        text = page.driver.switch_to.alert.text
    except NoAlertPresentException:
        return True
    raise CheckFailed(f"an alert opened: {text!r}")


def clipboard(page):
    """What the clipboard holds, read the way a page reads it (the permission is granted)."""
    return page.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "navigator.clipboard.readText().then(done, (error) => done('clipboard unreadable: ' + error));")


def grant_clipboard(page):
    page.driver.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": page.base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})


def markdown_checks(page, server):
    page.open()
    grant_clipboard(page)
    page.log("an answer in Markdown, loaded through the import route")
    rich = server.import_thread({"name": "Formatting", "messages": [
        {"role": "user", "content": "Show me **everything** (typed, not formatted)."},
        {"role": "assistant", "content": RICH_ANSWER, "completion_tokens": 300, "tokens_per_second": 9.5},
    ]})
    page.open(f"/#/chat/{rich['id']}")
    answer = page.wait(lambda d: page.done_answer(), "the imported answer")
    bubble = page.find("bubble", answer)
    check(page.source(bubble) == RICH_ANSWER, "the answer's source should be the stored text")
    question = page.find("bubble", page.messages("user")[0])
    check(page.text(question) == "Show me **everything** (typed, not formatted)." and not page.find_all("strong", question),
          "a question should show as typed")

    def texts(selector):
        return [page.text(node) for node in page.find_all(selector, bubble)]

    check(texts("h1") == ["Baking bread"] and texts("h2") == ["Steps"] and texts("h3") == ["Code"], f"headings: {texts('h1, h2, h3')}")
    check(texts("p strong") == ["four things"] and "patience" in texts("p em") and texts("del") == ["a machine"],
          f"emphasis: {texts('strong')} {texts('em')} {texts('del')}")
    check("snake_case_name.txt" in page.text(bubble) and not any("case" in t for t in texts("em")), "snake_case should stay as written")
    check("starter" in texts("p > code"), f"inline code: {texts('p > code')}")
    first = page.find_all("p", bubble)[0]
    check(len(page.find_all("br", first)) == 1, "a single newline in a paragraph should be a line break")

    lists = page.find_all(":scope > ol", bubble)
    check(len(lists) == 1 and len(page.find_all(":scope > li", lists[0])) == 3, "an ordered list of three")
    nested = page.find_all(":scope > li:nth-child(2) > ul > li", lists[0])
    check([page.text(li) for li in nested] == ["100 g, active", "10 g of salt"], f"a list nested in the second step: {[page.text(li) for li in nested]}")
    bullets = page.find_all(":scope > ul", bubble)
    check(len(bullets) == 1 and len(page.find_all(":scope > li > ul > li", bullets[0])) == 1, "a bullet list with a nested one")
    quote = page.find_all(":scope > blockquote", bubble)
    check(len(quote) == 1 and "Good bread takes time." in page.text(quote[0]), "a blockquote")
    check(len(page.find_all(":scope > hr", bubble)) == 1, "a horizontal rule")

    headers = texts("table th")
    check(headers == ["Ingredient", "Grams", "Share"], f"the table's header: {headers}")
    rows = [[page.text(cell) for cell in page.find_all("td", row)] for row in page.find_all("table tbody tr", bubble)]
    check(rows == [["Flour", "500", "100 %"], ["Water H2O", "350", "70 %"]], f"the table's rows: {rows}")
    aligns = [cell.value_of_css_property("text-align") for cell in page.find_all("table th", bubble)]
    check(aligns == ["left", "right", "center"], f"the columns' alignment: {aligns}")

    blocks = page.find_all("[data-testid='code-block']", bubble)
    labels = [page.text(page.find("code-language", block)) for block in blocks]
    check(labels == ["python", "javascript", "text"], f"code blocks with their languages: {labels}")
    python = page.find_all("pre code", blocks[0])[0]
    check(page.text(python) == PYTHON_CODE, f"the code should be shown exactly:\n{page.text(python)!r}")
    kinds = {kind: [page.text(span) for span in page.find_all(f".tok-{kind}", python)]
             for kind in ("keyword", "string", "comment", "number", "literal", "function")}
    check({"def", "return", "if", "else"} <= set(kinds["keyword"]) and kinds["string"] == ['"baked for {minutes}"']
          and kinds["comment"] == ["# Keep an eye on the crust."] and kinds["number"] == ["40"] and kinds["literal"] == ["None"]
          and kinds["function"] == ["bake"], f"the Python should be highlighted: {kinds}")
    check(page.find_all(".tok-comment", blocks[1]) and page.find_all(".tok-keyword", blocks[1]), "the JavaScript should be highlighted")
    check(not page.find_all("pre span", blocks[2]), "a block without a language is plain")

    paragraphs = " ".join(texts(":scope > p"))
    check("$E = mc^2$" in paragraphs and "$a_1 * b_2 * c_3$" in paragraphs, f"inline LaTeX should stay as written: {paragraphs!r}")
    display = texts(".math")
    check(display == ["$$\n\\int_0^1 x^2 \\, dx = \\frac{1}{3}\n$$"], f"display LaTeX should stay as written: {display}")

    links = page.find_all("a", bubble)
    check([link.get_attribute("href") for link in links] == ["https://example.com/bread?x=1&y=2", "https://example.org/flour"],
          f"the links: {[link.get_attribute('href') for link in links]}")
    check(all(link.get_attribute("target") == "_blank" and "noopener" in link.get_attribute("rel") for link in links),
          "links should open in a new tab, without access to this one")
    page.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", blocks[0])
    page.shot("markdown")

    page.log("the Copy button of a code block copies the code as written")
    page.click("copy-code", blocks[0])
    page.wait(lambda d: page.find("copy-code", blocks[0]).get_attribute("data-state") == "copied", "the Copy button to say Copied")
    check(page.text(page.find("copy-code", blocks[0])) == "Copied", "the button should say Copied")
    copied = clipboard(page)
    check(copied == PYTHON_CODE, f"the clipboard should hold the code:\n{copied!r}")
    page.wait(lambda d: page.text(page.find("copy-code", blocks[0])) == "Copy", "the button to say Copy again")
    page.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    page.shot("markdown-dark")
    page.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})

    page.log("streaming: the growing answer is rendered in place, an unclosed fence as a code block")
    result = page.driver.execute_script("""
        const text = arguments[0];
        const box = document.createElement('div');
        document.body.append(box);
        const problems = [];
        let heading = null, codeBlock = null, copyButton = null;
        for (let end = 1; end <= text.length; end += 3) {
          HearthMarkdown.renderInto(box, text.slice(0, end));
          if (!box.children.length) problems.push('empty at ' + end);
          const h = box.querySelector('h1');
          if (heading && h !== heading) problems.push('the finished heading was replaced at ' + end);
          if (h && text.slice(0, end).includes('\\n')) heading = h;
          const block = box.querySelector('.code-block');
          if (codeBlock && block !== codeBlock) problems.push('the code block was rebuilt at ' + end);
          if (codeBlock && block.querySelector('.copy-code') !== copyButton) problems.push('the Copy button was rebuilt at ' + end);
          // Once its first line (the language) is complete, the block stays while its code grows.
          if (block && !codeBlock && text.slice(0, end).includes('```python\\n')) {
            codeBlock = block;
            copyButton = block.querySelector('.copy-code');
          }
        }
        HearthMarkdown.renderInto(box, text);
        const fresh = document.createElement('div');
        HearthMarkdown.renderInto(fresh, text);
        const open = document.createElement('div');
        HearthMarkdown.renderInto(open, 'Run this:\\n\\n```sh\\necho "still streaming');
        box.remove();
        return {problems, same: fresh.innerHTML === box.innerHTML,
                open: open.querySelector('.code-block pre code') ? open.querySelector('.code-block pre code').textContent : null,
                openLanguage: open.querySelector('.code-language') && open.querySelector('.code-language').textContent};
    """, "# Title\n\nSome *text* here.\n\n```python\nprint('hello')\nx = 1\n```\n\nAfter the code.")
    check(not result["problems"], f"streaming re-renders should keep finished blocks: {result['problems'][:5]}")
    check(result["same"], "the streamed rendering should end the same as rendering the whole answer")
    check(result["open"] == 'echo "still streaming' and result["openLanguage"] == "sh",
          f"an unclosed fence should show as a code block: {result}")

    page.log("an answer (and a name, a question, thoughts) full of HTML and javascript: links shows as text and runs nothing")
    hostile = server.import_thread({"name": HOSTILE_NAME, "messages": [
        {"role": "user", "content": "\n".join(HOSTILE)},
        {"role": "assistant", "content": HOSTILE_ANSWER, "reasoning": "<img src=x onerror=\"window.__xss = 'thoughts'\">",
         "tokens_per_second": 10},
    ]})
    page.open(f"/#/chat/{hostile['id']}")
    answer = page.wait(lambda d: page.done_answer(), "the hostile answer")
    bubble = page.find("bubble", answer)
    # Enough time for an injected image's error handler or script to have run.
    page.driver.execute_script("return new Promise((resolve) => setTimeout(resolve, 500))")
    no_alert(page)
    check(page.driver.execute_script("return window.__xss === undefined"),
          f"nothing injected should run: window.__xss = {page.driver.execute_script('return window.__xss')!r}")
    injected = page.driver.execute_script("""
        return Array.from(document.querySelectorAll(
          '#message-list .bubble *, #message-list .thoughts *, #thread-list [data-testid=thread-name] *, #thread-title *'))
          .filter((node) => /^(SCRIPT|IMG|SVG|IFRAME|OBJECT|EMBED)$/i.test(node.tagName)
                            || Array.from(node.attributes).some((a) => a.name.startsWith('on')))
          .map((node) => node.outerHTML);""")
    check(not injected, f"no element should come from the text: {injected}")
    hrefs = page.driver.execute_script("return Array.from(document.querySelectorAll('#message-list a')).map((a) => a.getAttribute('href'))")
    check(not hrefs, f"no javascript: or data: link should be made: {hrefs}")
    shown = page.text(bubble)
    for payload in ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))",
                    "[mixed case](JaVaScRiPt:window.__xss='case')", "<a href=\"javascript:window.__xss='anchor'\">anchor</a>"):
        check(payload in shown, f"{payload!r} should show as text in the answer:\n{shown}")
    check("</code></pre><img src=x" in page.text(page.find("code-block", bubble)), "the code block should show its HTML as text")
    check(page.text(page.find("bubble", page.messages("user")[0])) == "\n".join(HOSTILE), "the question should show as typed")
    check(page.title() == HOSTILE_NAME and HOSTILE_NAME in page.thread_names(), "the thread's name should show as text")
    thoughts = page.find("thoughts", answer)
    page.click("thoughts-summary", thoughts)
    check(page.text(page.find("thoughts-text", thoughts)) == "<img src=x onerror=\"window.__xss = 'thoughts'\">", "thoughts show as text")
    # Clicking the text of a refused link does nothing either.
    page.driver.find_element(By.XPATH, "//div[@data-testid='bubble']//p[contains(., 'click me')]").click()
    no_alert(page)
    check(page.driver.execute_script("return window.__xss === undefined"), "a click on a refused link should run nothing")
    check(page.driver.current_url.startswith(page.base), "the page should not have navigated")
    page.shot("hostile")


# ---------------------------------------------------------------------------------------------
# Editing a question

def edit_checks(page, server):
    page.open()
    page.log("a chat of two questions")
    page.click("new-thread")
    page.wait(lambda d: re.fullmatch(r"Chat \d+", page.title()), "a new chat")
    thread_id = server.threads()[0]["id"]
    send(page, "Name a fruit.")
    page.wait(lambda d: page.done_answer(), "the first answer", timeout=ANSWER_TIMEOUT)
    first_answer = page.done_answer().get_attribute("data-message-id")
    send(page, "Name a colour.")
    page.wait(lambda d: page.done_answer(exclude_id=first_answer), "the second answer", timeout=ANSWER_TIMEOUT)
    before = server.messages(thread_id)
    check([m["role"] for m in before] == ["user", "assistant"] * 2, f"two questions and two answers: {before}")
    questions = page.messages("user")
    check(all(page.find_all("[data-testid='edit-message']", q) for q in questions), "every question should offer Edit")
    check(not page.find_all("[data-testid='edit-message']", page.messages("assistant")[0]), "answers are regenerated, not edited")

    page.log("Esc cancels an edit and changes nothing")
    page.click("edit-message", questions[0])
    field = page.wait(lambda d: page._clickable("edit-input", None), "the edit box")
    check(field.get_attribute("value") == "Name a fruit.", "the edit box should hold the question")
    check(page.driver.switch_to.active_element == field, "the edit box should have the focus")
    check(not page.find("bubble", questions[0]).is_displayed(), "the bubble should give way to the edit box")
    page.shot("editing")
    field.send_keys(" And more")
    field.send_keys(Keys.ESCAPE)
    page.wait(lambda d: not page.find_all("[data-testid='edit-form']"), "the edit box to close")
    check(page.text(page.find("bubble", page.messages("user")[0])) == "Name a fruit.", "a cancelled edit should keep the text")
    check(len(page.messages()) == 4 and server.messages(thread_id) == before, "a cancelled edit should change nothing")

    page.log("↑ in the empty message box edits the last question; Cancel closes it")
    prompt = page.find("prompt")
    prompt.click()
    prompt.send_keys(Keys.ARROW_UP)
    field = page.wait(lambda d: page._clickable("edit-input", None), "the edit box of the last question")
    check(field.get_attribute("value") == "Name a colour.", "↑ should edit the last question")
    page.click("edit-cancel")
    page.wait(lambda d: not page.find_all("[data-testid='edit-form']"), "the edit box to close")

    page.log("edit the first question: the rest of the chat is replaced by a new answer")
    question_id = page.messages("user")[0].get_attribute("data-message-id")
    page.click("edit-message", page.messages("user")[0])
    field = page.wait(lambda d: page._clickable("edit-input", None), "the edit box")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("Name a vegetable.")
    field.send_keys(Keys.CONTROL, Keys.ENTER)
    page.wait(lambda d: len(page.messages("user")) == 1, "the later messages to go")
    check(page.text(page.find("bubble", page.messages("user")[0])) == "Name a vegetable.", "the question should show its new text")
    answer = page.wait(lambda d: page.done_answer(exclude_id=first_answer), "the new answer", timeout=ANSWER_TIMEOUT)
    stored = server.messages(thread_id)
    check([m["role"] for m in stored] == ["user", "assistant"], f"the server should keep the edited question and its answer: {stored}")
    check(stored[0]["content"] == "Name a vegetable." and str(stored[0]["id"]) == question_id, "the question is edited in place")
    check(str(stored[1]["id"]) == answer.get_attribute("data-message-id") and page.source(page.find("bubble", answer)) == stored[1]["content"],
          "the page should show the stored answer")
    check(len(page.messages()) == 2, "the page should show the question and its answer only")
    page.shot("edited")

    page.log("the edit holds after a reload")
    page.driver.refresh()
    page.wait(lambda d: len(page.messages()) == 2 and page.done_answer(), "the chat after a reload")
    check(page.text(page.find("bubble", page.messages("user")[0])) == "Name a vegetable.", "the edited question after a reload")


# ---------------------------------------------------------------------------------------------
# Copy, search, export and import, keyboard shortcuts

BREAD = {"name": "Baking bread", "preset": "precise", "messages": [
    {"role": "user", "content": "How long does sourdough rise?"},
    {"role": "assistant", "content": "About **4 to 6 hours** at room temperature.\n\n```text\nwarm: 4 h\ncool: 6 h\n```",
     "completion_tokens": 30, "tokens_per_second": 12.5},
]}
TRIP = {"name": "Trip to Zürich", "messages": [
    {"role": "user", "content": "What should I eat?"},
    {"role": "assistant", "content": "Try Rösti, and fondue in winter."},
]}


def wait_for_download(folder, name):
    path = os.path.join(folder, name)
    deadline = time.monotonic() + UI_TIMEOUT
    while time.monotonic() < deadline:
        if os.path.exists(path) and not any(f.endswith(".crdownload") for f in os.listdir(folder)):
            return path
        time.sleep(0.1)
    raise CheckFailed(f"{name} was not downloaded; the folder has {os.listdir(folder)}")


def unfocus(page):
    """Takes the focus out of any field, so that keys go to the page itself."""
    page.driver.execute_script("if (document.activeElement) document.activeElement.blur();")


def press(page, *keys):
    """Key presses sent to whatever has the focus, as a person types them."""
    actions = ActionChains(page.driver)
    modifiers = [key for key in keys[:-1]]
    for key in modifiers:
        actions.key_down(key)
    actions.send_keys(keys[-1])
    for key in reversed(modifiers):
        actions.key_up(key)
    actions.perform()


def tools_checks(page, server, downloads):
    bread = server.import_thread(BREAD)
    trip = server.import_thread(TRIP)
    page.open()
    grant_clipboard(page)
    page.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    page.wait(lambda d: page.thread_names() == ["Trip to Zürich", "Baking bread"], "the imported chats in the list")

    page.log("search: / focuses the box; names and message text are searched, ignoring case and accents")
    unfocus(page)
    press(page, "/")
    search = page.find("thread-search")
    page.wait(lambda d: d.switch_to.active_element == search, "the search box to have the focus")
    search.send_keys("rosti")
    page.wait(lambda d: page.thread_names() == ["Trip to Zürich"], "the chat whose answer says Rösti")
    page.shot("search")
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys("SOURDOUGH")
    page.wait(lambda d: page.thread_names() == ["Baking bread"], "the chat whose question says sourdough")
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys("zürich")
    page.wait(lambda d: page.thread_names() == ["Trip to Zürich"], "the chat named Zürich")
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys("no chat says this")
    page.wait(lambda d: page.visible("no-results") and not page.thread_names(), "the no-results line")
    search.send_keys(Keys.ESCAPE)
    page.wait(lambda d: page.thread_names() == ["Trip to Zürich", "Baking bread"] and search.get_attribute("value") == "",
              "Esc to clear the search")
    search.send_keys("bread")
    page.wait(lambda d: page.thread_names() == ["Baking bread"], "the bread chat")
    search.send_keys(Keys.ENTER)
    page.wait(lambda d: page.title() == "Baking bread", "Enter to open the chat found")

    page.log("Copy an answer: its Markdown as written")
    answer = page.wait(lambda d: page.done_answer(), "the answer")
    page.click("copy-answer", answer)
    page.wait(lambda d: page.find("copy-answer", answer).get_attribute("data-state") == "copied", "Copied")
    copied = clipboard(page)
    check(copied == BREAD["messages"][1]["content"], f"the clipboard should hold the answer as written:\n{copied!r}")
    page.shot("copied")

    page.log("the clipboard fallback where the Clipboard API is refused")
    page.driver.execute_script("navigator.clipboard.writeText = () => Promise.reject(new Error('refused'));")
    page.click("copy-code", answer)
    page.wait(lambda d: page.find("copy-code", answer).get_attribute("data-state") in ("copied", "failed"), "the copy to end")
    check(page.find("copy-code", answer).get_attribute("data-state") == "copied", "the fallback should copy")
    check(clipboard(page) == "warm: 4 h\ncool: 6 h", f"the fallback should copy the code: {clipboard(page)!r}")
    page.open(f"/#/chat/{bread['id']}")

    page.log("export as JSON and as Markdown")
    page.click("export-button")
    page.wait(lambda d: page.visible("export-json"), "the export menu")
    page.shot("export-menu")
    page.click("export-json")
    exported_path = wait_for_download(downloads, "Baking bread.json")
    with open(exported_path, encoding="utf-8") as file:
        exported = json.load(file)
    on_server = server.request("GET", f"/v1/threads/{bread['id']}/export")
    check(exported == on_server, f"the file should hold the server's export:\n{exported}\n{on_server}")
    check([m["content"] for m in exported["messages"]] == [m["content"] for m in BREAD["messages"]], "the export holds the messages")
    check(not page.visible("export-json"), "the menu should close")
    page.click("export-button")
    page.click("export-markdown")
    with open(wait_for_download(downloads, "Baking bread.md"), encoding="utf-8") as file:
        markdown = file.read()
    check(markdown.startswith("# Baking bread\n") and "## You\n\nHow long does sourdough rise?" in markdown
          and "## Assistant\n\n" + BREAD["messages"][1]["content"] in markdown, f"the Markdown transcript:\n{markdown}")

    page.log("import the JSON export: a new chat with the same messages")
    before = {t["id"] for t in server.threads()}
    page.find("import-file").send_keys(exported_path)
    page.wait(lambda d: len(server.threads()) == len(before) + 1, "the imported chat on the server")
    new_id = next(t["id"] for t in server.threads() if t["id"] not in before)
    page.wait(lambda d: page.selected_thread() is not None and page.selected_thread().get_attribute("data-thread-id") == new_id,
              "the imported chat to open")
    page.wait(lambda d: len(page.messages()) == 2, "its messages")
    check([m["content"] for m in server.messages(new_id)] == [m["content"] for m in BREAD["messages"]], "the same messages")
    check(server.thread(new_id)["preset"] == "precise", "the same settings")
    page.wait(lambda d: "Imported" in page.find("toast").text, "the import to be announced")
    page.shot("imported")

    page.log("a file that is not an export is refused with a reason; a missing model falls back to the default, saying so")
    not_json = os.path.join(downloads, "notes.json")
    with open(not_json, "w") as file:
        file.write("these are notes, not JSON")
    page.find("import-file").send_keys(not_json)
    page.wait(lambda d: "not JSON" in page.find("toast").text, "the refusal")
    foreign = os.path.join(downloads, "foreign.json")
    with open(foreign, "w") as file:
        json.dump({**TRIP, "name": "From elsewhere", "model": "a-model-this-server-lacks"}, file)
    page.find("import-file").send_keys(foreign)
    page.wait(lambda d: page.title() == "From elsewhere", "the foreign chat to open")
    check("a-model-this-server-lacks" in page.find("toast").text and "default model" in page.find("toast").text,
          f"the toast should say the model is missing: {page.find('toast').text!r}")
    check(next(t for t in server.threads() if t["name"] == "From elsewhere")["model"] is None, "it uses the default model")

    page.log("? lists the shortcuts")
    unfocus(page)
    press(page, "?")
    page.wait(lambda d: page.visible("help-dialog"), "the help dialog")
    rows = [page.text(row) for row in page.find_all("[data-testid='shortcut']")]
    check(any("New chat" in row and "Shift" in row for row in rows) and any("Search" in row for row in rows)
          and any("Stop" in row for row in rows), f"the shortcuts should be listed: {rows}")
    page.shot("shortcuts")
    press(page, Keys.ESCAPE)
    page.wait(lambda d: not page.visible("help-dialog"), "Esc to close the help")

    page.log("Ctrl+Shift+O starts a chat; Shift+Esc focuses the message box")
    count = len(server.threads())
    unfocus(page)
    press(page, Keys.CONTROL, Keys.SHIFT, "o")
    page.wait(lambda d: re.fullmatch(r"Chat \d+", page.title()) and len(server.threads()) == count + 1, "a new chat")
    unfocus(page)
    press(page, Keys.SHIFT, Keys.ESCAPE)
    page.wait(lambda d: d.switch_to.active_element == page.find("prompt"), "the message box to have the focus")

    page.log("Ctrl+Enter sends; Esc stops the answer")
    prompt = page.find("prompt")
    prompt.send_keys("Write a very long story about a dragon who learns to bake bread. Use many chapters.")
    prompt.send_keys(Keys.CONTROL, Keys.ENTER)
    page.wait(lambda d: [m for m in page.messages("assistant") if m.get_attribute("data-state") == "streaming" and page.text(m).strip()],
              "the story to start", timeout=ANSWER_TIMEOUT)
    press(page, Keys.ESCAPE)
    page.wait(lambda d: page.visible("unanswered") and not page.visible("stop"), "Esc to stop the answer")
    page.shot("story-stopped")
    thread_id = page.wait(lambda d: page.selected_thread().get_attribute("data-thread-id"), "the chat's id")
    check([m["role"] for m in server.messages(thread_id)] == ["user"], "the stopped answer should not be stored")


# ---------------------------------------------------------------------------------------------
# A phone-sized window

def mobile_checks(page, server):
    wide = server.import_thread({"name": "Wide content", "messages": [
        {"role": "user", "content": "Show a wide table and long code."},
        {"role": "assistant", "content": "| " + " | ".join(f"column {i}" for i in range(12)) + " |\n|" + "---|" * 12 + "\n| "
         + " | ".join(str(i) for i in range(12)) + " |\n\n```python\nprint('" + "x" * 200 + "')\n```", "tokens_per_second": 10},
    ]})
    server.import_thread({"name": "Second chat", "messages": []})
    page.driver.set_window_size(390, 844)
    page.open(f"/#/chat/{wide['id']}")
    width = page.driver.execute_script("return window.innerWidth")
    check(width < 700, f"the window should be phone-sized: {width}px")
    page.wait(lambda d: page.done_answer(), "the answer")
    check(not page.find("thread-list").is_displayed() and page.visible("open-sidebar"), "the chat list should hide behind the menu button")
    overflow = page.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    check(overflow <= 0, f"nothing should make the page scroll sideways ({overflow}px too wide)")
    check(page.find("composer").is_displayed() and page.find("composer").rect["width"] <= width, "the composer should fit")
    page.shot("phone-chat")

    page.log("the menu button slides the chat list in; choosing a chat closes it")
    page.click("open-sidebar")
    page.wait(lambda d: page.find("thread-list").is_displayed() and page.visible("sidebar-backdrop"), "the chat list")
    check(page.find("open-sidebar").get_attribute("aria-expanded") == "true", "the button should say the list is open")
    page.wait(lambda d: page.driver.execute_script(
        "return document.querySelector('.sidebar').getBoundingClientRect().left") >= 0, "the list to finish sliding in")
    page.shot("phone-sidebar")
    second = next(item for item in page.find_all("[data-testid='thread-item']") if page.text(item).strip() == "Second chat")
    page.find("thread-name", second).click()
    page.wait(lambda d: page.title() == "Second chat" and not page.find("thread-list").is_displayed(), "the chat, with the list closed")

    page.log("Esc and the backdrop close the list too")
    page.click("open-sidebar")
    page.wait(lambda d: page.find("thread-list").is_displayed(), "the chat list")
    press(page, Keys.ESCAPE)
    page.wait(lambda d: not page.find("thread-list").is_displayed(), "Esc to close the list")
    page.click("open-sidebar")
    page.wait(lambda d: page.visible("sidebar-backdrop"), "the backdrop")
    page.driver.execute_script("document.getElementById('sidebar-backdrop').click()")
    page.wait(lambda d: not page.find("thread-list").is_displayed(), "the backdrop to close the list")

    page.log("a question and its answer on the phone")
    send(page, "Say hi in three words.")
    page.wait(lambda d: page.done_answer(), "the answer", timeout=ANSWER_TIMEOUT)
    page.shot("phone-answered")

    page.log("wider again: the list is back beside the chat")
    page.driver.set_window_size(1280, 860)
    page.wait(lambda d: page.find("thread-list").is_displayed() and not page.visible("open-sidebar"), "the two-column layout")
    page.shot("desktop-again")


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
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--edit", action="store_true")
    parser.add_argument("--tools", action="store_true")
    parser.add_argument("--mobile", action="store_true")
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
        elif arguments.markdown:
            markdown_checks(page, Server(arguments.base))
        elif arguments.edit:
            edit_checks(page, Server(arguments.base))
        elif arguments.tools:
            downloads = os.path.join(arguments.screenshots, "downloads")
            os.makedirs(downloads, exist_ok=True)
            tools_checks(page, Server(arguments.base), downloads)
        elif arguments.mobile:
            mobile_checks(page, Server(arguments.base))
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
