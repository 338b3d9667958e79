import Foundation
import HearthTestSupport
import Testing

/// Headless Chromium driven by Selenium from Python (web_ui_test.py beside this file).
enum Browser {
    static let chromium = "/usr/bin/chromium"
    static let chromedriver = "/usr/bin/chromedriver"

    static let available: Bool = {
        guard FileManager.default.isExecutableFile(atPath: chromium), FileManager.default.isExecutableFile(atPath: chromedriver) else {
            return false
        }
        return Python.canImport("selenium")
    }()

    /// On CI the tools are installed by .ci/run, so their absence is a failure, not a skip.
    static var enabled: Bool { available || ProcessInfo.processInfo.environment["CI"] != nil }

    static let missing = "chromium, chromedriver or Python's selenium is missing: apt-get install chromium chromium-driver; pip install selenium (.ci/run does)"

    static let script = TestFiles.packageRoot.appendingPathComponent("Tests/HearthServerTests/web_ui_test.py")

    /// Screenshots stay after the run, under .build where CI keeps its artifacts.
    static func screenshotFolder(_ name: String) throws -> URL {
        let folder = TestFiles.packageRoot.appendingPathComponent(".build/test-artifacts/web-ui/\(name)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Runs the script against `server` and fails the test with its output unless it exits 0.
    static func run(_ server: ServeProcess, screenshots: URL, _ arguments: [String] = []) async throws {
        try #require(available, "\(missing)")
        print("web UI screenshots: \(screenshots.path)")
        let child = try Child(URL(fileURLWithPath: "/usr/bin/env"),
                              ["python3", script.path, server.base, screenshots.path] + arguments,
                              environment: ProcessInfo.processInfo.environment.merging(["PYTHONUNBUFFERED": "1"]) { _, new in new },
                              directory: server.directory)
        // The script bounds each step; this bounds a browser that stops answering altogether.
        let status = try await child.wait(atMost: .seconds(900))
        #expect(status == 0, "web_ui_test.py exited \(status); screenshots in \(screenshots.path)\n\(child.outputText)\n\(child.errorText)")
    }
}

@Suite("Web UI in headless Chromium", .serialized, .enabled(if: Browser.enabled, "\(Browser.missing)"))
struct WebUITests {
    @Test("chat: create, rename, settings, streamed answer, regenerate, stop, error and retry, delete, clear all, models, pull")
    func chat() async throws {
        // A small model on the Hub, sent slowly enough that the page shows its progress. The
        // Hub runs in a process of its own, as the server does, so that other tests' work in
        // this process cannot stall the download.
        let bytes = try tinyModelBytes()
        let directory = try TemporaryDirectory()
        let file = directory.file("tiny-Q8_0.gguf")
        try bytes.write(to: file)
        let hub = try Child(try TestFiles.executable("hub-emulator"),
                            ["--trickle", String(max(bytes.count / 3, 1024)), "test-org/tiny-GGUF", file.path],
                            environment: ProcessInfo.processInfo.environment, directory: directory)
        hub.killWhenTestsEnd()
        defer { hub.signal(SIGKILL) }
        var endpoint: URL?
        try await waitUntil("hub-emulator to listen", every: .milliseconds(50)) {
            endpoint = hub.outputText.split(separator: "\n").first { $0.hasPrefix("http") }.flatMap { URL(string: String($0)) }
            if endpoint == nil { try #require(hub.isRunning, "hub-emulator exited: \(hub.errorText)") }
            return endpoint != nil
        }
        let hubEndpoint: URL = try #require(endpoint, "hub-emulator did not start: \(hub.errorText)")
        let server = try await ServeProcess(hubEndpoint: hubEndpoint)
        do {
            try await Browser.run(server, screenshots: try Browser.screenshotFolder("chat"), ["--pull", "test-org/tiny-GGUF"])
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("a server with an API key: the page asks for it once and keeps it")
    func apiKey() async throws {
        let key = "web-ui-test-key"
        let server = try await ServeProcess(apiKey: key)
        defer { Task { await server.stop() } }
        try await Browser.run(server, screenshots: try Browser.screenshotFolder("api-key"), ["--api-key", key])
    }

    @Test("a reasoning model: its thoughts stream into a folded block above the answer")
    func thoughts() async throws {
        let server = try await ServeProcess { directory in ["smollm2-thinking": try ReasoningModels.smolLM2(in: directory.url)] }
        defer { Task { await server.stop() } }
        try await Browser.run(server, screenshots: try Browser.screenshotFolder("thoughts"), ["--thoughts", "smollm2-thinking"])
    }

    @Test("Markdown answers: headings, emphasis, lists, tables, links, highlighted code with Copy, LaTeX as written, streaming in place; HTML and javascript: links run nothing")
    func markdown() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        try await Browser.run(server, screenshots: try Browser.screenshotFolder("markdown"), ["--markdown"])
    }

    @Test("edit a question: Esc and Cancel keep it, ↑ edits the last one, Save replaces the rest of the chat with a new answer")
    func edit() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        try await Browser.run(server, screenshots: try Browser.screenshotFolder("edit"), ["--edit"])
    }

    @Test("copy an answer, search chats, export as JSON and Markdown, import, keyboard shortcuts and their help")
    func tools() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        try await Browser.run(server, screenshots: try Browser.screenshotFolder("tools"), ["--tools"])
    }

    @Test("a phone-sized window: the chat list slides over the chat from a menu button")
    func mobile() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        try await Browser.run(server, screenshots: try Browser.screenshotFolder("mobile"), ["--mobile"])
    }

    @Test("speech in: an uploaded WAV's text and a dictation through the fake microphone land in the message box; a denied microphone says so")
    func speech() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let clip = try SpeechClips.url(SpeechClips.dashwood)
        let expected = try await sdkTranscription(clip).text.trimmingCharacters(in: .whitespaces)
        try await Browser.run(server, screenshots: try Browser.screenshotFolder("speech"), ["--speech", clip.path, "--speech-text", expected])
    }

    @Test("speech in on a server without a speech model: the page says how to start it with one")
    func noSpeechModel() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let clip = try SpeechClips.url(SpeechClips.dashwood)
        try await Browser.run(server, screenshots: try Browser.screenshotFolder("no-speech"), ["--no-speech", clip.path])
    }
}
