import Foundation
import Hearth
import HearthTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Chat threads over HTTP", .serialized)
struct ThreadTests {
    /// Sends `content` to a thread and reads the streamed events.
    static func send(_ server: ServeProcess, thread: String, _ content: String) async throws -> [[String: Any]] {
        var events: [[String: Any]] = []
        let status = try await server.stream("/v1/threads/\(thread)/messages", ["content": content]) { line in
            events.append(try jsonObject(line))
            return true
        }
        #expect(status == 200)
        return events
    }

    @Test("create, list, rename, settings, send, regenerate, delete, clear-all", arguments: StoreEngine.available)
    func lifecycle(engine: StoreEngine) async throws {
        let server = try await ServeProcess(engine: engine)
        defer { Task { await server.stop() } }
        let first = try await server.post("/v1/threads", [:])
        #expect(first.status == 201)
        let id = try #require(try first.json()["id"] as? String)
        #expect(try first.json()["name"] as? String == "Chat 1")
        let second = try await server.post("/v1/threads", ["preset": "precise", "system_prompt": "Answer in one word."])
        let secondID = try #require(try second.json()["id"] as? String)
        #expect(try second.json()["name"] as? String == "Chat 2")

        let renamed = try await server.send(.PATCH, "/v1/threads/\(id)", body: #"{"name": "  Trip planning  "}"#)
        #expect(try renamed.json()["name"] as? String == "Trip planning")
        #expect(try await server.send(.PATCH, "/v1/threads/\(id)", body: #"{"name": "   "}"#).status == 400)
        #expect(try await server.send(.PATCH, "/v1/threads/\(id)", body: #"{"preset": "wild"}"#).status == 400)
        #expect(try await server.send(.PATCH, "/v1/threads/\(id)", body: #"{"model": "no-such-model"}"#).status == 404)
        let settings = try await server.send(.PATCH, "/v1/threads/\(id)", body: #"{"preset": "code", "system_prompt": "Be brief."}"#)
        #expect(try settings.json()["preset"] as? String == "code")
        #expect(try settings.json()["name"] as? String == "Trip planning")

        // A greedy thread's answer equals the engine's own.
        _ = try await server.send(.PATCH, "/v1/threads/\(secondID)", body: #"{"preset": null}"#)
        let events = try await Self.send(server, thread: secondID, "Name a fruit.")
        #expect(events.first?["type"] as? String == "message")
        let done = try #require(events.last)
        #expect(done["type"] as? String == "done", "\(events)")
        let streamed = events.filter { $0["type"] as? String == "delta" }.map { $0["content"] as? String ?? "" }.joined()
        let stored = try #require(done["message"] as? [String: Any])
        #expect(stored["content"] as? String == streamed)
        #expect((stored["tokens_per_second"] as? Double ?? 0) > 0)

        var messages = try await server.get("/v1/threads/\(secondID)/messages").json()["data"] as? [[String: Any]] ?? []
        #expect(messages.map { $0["role"] as? String ?? "" } == ["user", "assistant"])
        let regenerated = try await server.stream("/v1/threads/\(secondID)/regenerate", [:]) { _ in true }
        #expect(regenerated == 200)
        messages = try await server.get("/v1/threads/\(secondID)/messages").json()["data"] as? [[String: Any]] ?? []
        #expect(messages.map { $0["role"] as? String ?? "" } == ["user", "assistant"])

        let listed = try await server.get("/v1/threads").json()["data"] as? [[String: Any]] ?? []
        #expect(listed.first?["id"] as? String == secondID, "the thread written last comes first")

        #expect(try await server.send(.DELETE, "/v1/messages").status == 204)
        #expect((try await server.get("/v1/threads/\(secondID)/messages").json()["data"] as? [Any])?.isEmpty == true)
        #expect((try await server.get("/v1/threads").json()["data"] as? [Any])?.count == 2)

        #expect(try await server.send(.DELETE, "/v1/threads/\(id)").status == 204)
        #expect(try await server.get("/v1/threads/\(id)").status == 404)
        let third = try await server.post("/v1/threads", [:])
        #expect(try third.json()["name"] as? String == "Chat 3", "the counter never goes back")
        #expect(try await server.post("/v1/threads/\(id)/messages", ["content": "hi"]).status == 404)
        #expect(try await server.post("/v1/threads/\(secondID)/messages", ["content": "  "]).status == 400)
    }

    @Test("a stopped answer is not stored; the question stays", arguments: StoreEngine.available)
    func stoppedAnswer(engine: StoreEngine) async throws {
        let server = try await ServeProcess(engine: engine)
        defer { Task { await server.stop() } }
        let id = try #require(try await server.post("/v1/threads", [:]).json()["id"] as? String)
        var deltas = 0
        _ = try await server.stream("/v1/threads/\(id)/messages", ["content": "Write a very long story about a dragon."]) { line in
            if try jsonObject(line)["type"] as? String == "delta" { deltas += 1 }
            return deltas < 5
        }
        // The stop is handled once the generation (which held a slot while the client read) has
        // ended and given its slot back: an answer stored for a stopped stream is stored by then.
        try await waitUntil("the stopped generation to end", every: .milliseconds(50)) {
            try metric("hearth_slots_busy", in: try await server.get("/metrics").text) == 0
        }
        let messages = try await server.get("/v1/threads/\(id)/messages").json()["data"] as? [[String: Any]] ?? []
        #expect(messages.map { $0["role"] as? String ?? "" } == ["user"])
    }

    @Test("a thread longer than the context is answered from its latest turns and keeps the older ones stored; Ollama's chat does the same, OpenAI's refuses")
    func longerThanTheContext() async throws {
        let server = try await ServeProcess(contextLength: 256)
        defer { Task { await server.stop() } }
        // 120 tokens: one fits with room for an answer, two do not fit together.
        let long = String(repeating: "This sentence is rather long. ", count: 20)
        let id = try #require(try await server.post("/v1/threads", [:]).json()["id"] as? String)
        for _ in 0..<3 {
            let events = try await Self.send(server, thread: id, long)
            #expect(events.last?["type"] as? String == "done", "\(events)")
        }
        let roles = try await Self.messages(server, thread: id).map { $0["role"] as? String ?? "" }
        #expect(roles == ["user", "assistant", "user", "assistant", "user", "assistant"])

        let conversation: [[String: Any]] = [["role": "user", "content": long], ["role": "assistant", "content": "Indeed."],
                                             ["role": "user", "content": long]]
        let ollama = try await server.post("/api/chat", ["model": "smollm2", "stream": false, "messages": conversation,
                                                         "options": ["num_predict": 8]])
        #expect(ollama.status == 200)
        #expect(try ollama.json()["done"] as? Bool == true)
        let openAI = try await server.post("/v1/chat/completions", ["messages": conversation, "max_tokens": 8])
        #expect(openAI.status == 400)
        #expect((try openAI.json()["error"] as? [String: Any])?["code"] as? String == "context_length_exceeded")
    }

    static func messages(_ server: ServeProcess, thread: String) async throws -> [[String: Any]] {
        try await server.get("/v1/threads/\(thread)/messages").json()["data"] as? [[String: Any]] ?? []
    }

    @Test("edit a question: its text is replaced, the later messages go, and a new answer streams and is stored", arguments: StoreEngine.available)
    func editQuestion(engine: StoreEngine) async throws {
        let server = try await ServeProcess(engine: engine)
        defer { Task { await server.stop() } }
        let id = try #require(try await server.post("/v1/threads", ["preset": "precise"]).json()["id"] as? String)
        let other = try #require(try await server.post("/v1/threads", [:]).json()["id"] as? String)
        _ = try await Self.send(server, thread: id, "Name a fruit.")
        _ = try await Self.send(server, thread: id, "Name another one.")
        _ = try await Self.send(server, thread: other, "Say hi.")
        var messages = try await Self.messages(server, thread: id)
        try #require(messages.map { $0["role"] as? String ?? "" } == ["user", "assistant", "user", "assistant"])
        let firstAnswer = try #require(messages[1]["id"] as? Int)
        let secondQuestion = try #require(messages[2]["id"] as? Int)
        let secondAnswer = try #require(messages[3]["id"] as? Int)

        var events: [[String: Any]] = []
        let status = try await server.stream("/v1/threads/\(id)/messages/\(secondQuestion)/edit", ["content": "Name a vegetable."]) { line in
            events.append(try jsonObject(line))
            return true
        }
        #expect(status == 200)
        let question = try #require(events.first?["message"] as? [String: Any], "\(events)")
        #expect(events.first?["type"] as? String == "message")
        #expect(question["id"] as? Int == secondQuestion && question["content"] as? String == "Name a vegetable.")
        let done = try #require(events.last)
        #expect(done["type"] as? String == "done", "\(events)")
        let streamed = events.filter { $0["type"] as? String == "delta" }.map { $0["content"] as? String ?? "" }.joined()
        let answer = try #require(done["message"] as? [String: Any])
        #expect(answer["content"] as? String == streamed)

        messages = try await Self.messages(server, thread: id)
        try #require(messages.map { $0["role"] as? String ?? "" } == ["user", "assistant", "user", "assistant"])
        #expect(messages[1]["id"] as? Int == firstAnswer, "what came before the edited question stays")
        #expect(messages[2]["content"] as? String == "Name a vegetable.")
        #expect(messages[3]["id"] as? Int == answer["id"] as? Int && (answer["id"] as? Int ?? 0) > secondAnswer)
        #expect(try await Self.messages(server, thread: other).count == 2, "other threads are untouched")

        // Refusals: an answer, a message of another thread, an id that is not one, empty text, an unknown thread.
        let otherQuestion = try #require(try await Self.messages(server, thread: other).first?["id"] as? Int)
        #expect(try await server.post("/v1/threads/\(id)/messages/\(firstAnswer)/edit", ["content": "x"]).status == 400)
        #expect(try await server.post("/v1/threads/\(id)/messages/\(otherQuestion)/edit", ["content": "x"]).status == 404)
        #expect(try await server.post("/v1/threads/\(id)/messages/abc/edit", ["content": "x"]).status == 404)
        #expect(try await server.post("/v1/threads/\(id)/messages/\(secondQuestion)/edit", ["content": " \n"]).status == 400)
        #expect(try await server.post("/v1/threads/no-such-thread/messages/\(secondQuestion)/edit", ["content": "x"]).status == 404)
        #expect(try await Self.messages(server, thread: id).map { $0["id"] as? Int } == messages.map { $0["id"] as? Int },
                "a refused edit changes nothing")
    }

    @Test("GET /v1/threads?search= lists the threads whose name or messages hold the text", arguments: StoreEngine.available)
    func search(engine: StoreEngine) async throws {
        let server = try await ServeProcess(engine: engine)
        defer { Task { await server.stop() } }
        let body: [String: Any] = ["name": "Zürich trip", "messages": [
            ["role": "user", "content": "Where should we eat?"], ["role": "assistant", "content": "Try the Rösti place."]]]
        let trip = try #require(try await server.post("/v1/threads/import", body).json()["id"] as? String)
        let bread = try #require(try await server.post("/v1/threads/import", ["name": "Baking", "messages": [
            ["role": "user", "content": "How long does sourdough rise?"]]]).json()["id"] as? String)
        let empty = try #require(try await server.post("/v1/threads", [:]).json()["id"] as? String)
        func search(_ text: String) async throws -> [String] {
            let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
            let encoded = text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
            let answer = try await server.get("/v1/threads?search=\(encoded)")
            #expect(answer.status == 200)
            return (try answer.json()["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        }
        #expect(try await search("zurich") == [trip])
        #expect(try await search("RÖSTI") == [trip])
        #expect(try await search("sourdough") == [bread])
        #expect(try await search("o") == [bread, trip])
        #expect(try await search("no such words") == [])
        #expect(try await search("") == [empty, bread, trip])
    }

    @Test("export a thread and import it back: a new thread with the same settings and messages", arguments: StoreEngine.available)
    func exportImport(engine: StoreEngine) async throws {
        let server = try await ServeProcess(engine: engine)
        defer { Task { await server.stop() } }
        let id = try #require(try await server.post("/v1/threads", ["preset": "precise", "system_prompt": "Be brief."]).json()["id"] as? String)
        _ = try await server.send(.PATCH, "/v1/threads/\(id)", body: #"{"name": "Fruit / \"chat\" é"}"#)
        _ = try await Self.send(server, thread: id, "Name a fruit.")
        let export = try await server.get("/v1/threads/\(id)/export")
        #expect(export.status == 200)
        #expect(export.headers.first(name: "Content-Disposition") == #"attachment; filename="Fruit _ _chat_ _.json""#)
        let exported = try export.json()
        #expect(exported["object"] as? String == "thread.export" && exported["version"] as? Int == 1)
        #expect(exported["name"] as? String == "Fruit / \"chat\" é" && exported["preset"] as? String == "precise")
        #expect(exported["system_prompt"] as? String == "Be brief." && exported["model"] is NSNull)
        let exportedMessages = try #require(exported["messages"] as? [[String: Any]])
        let stored = try await Self.messages(server, thread: id)
        #expect(exportedMessages.map { $0["content"] as? String } == stored.map { $0["content"] as? String })
        #expect(exportedMessages.last?["tokens_per_second"] as? Double == stored.last?["tokens_per_second"] as? Double)

        // The export, as it is, imports as a new thread.
        let imported = try await server.send(.POST, "/v1/threads/import", body: export.text)
        #expect(imported.status == 201, "\(imported.text)")
        let copy = try imported.json()
        let copyID = try #require(copy["id"] as? String)
        #expect(copyID != id)
        #expect(copy["name"] as? String == exported["name"] as? String && copy["preset"] as? String == "precise")
        #expect(copy["system_prompt"] as? String == "Be brief.")
        let copied = try await Self.messages(server, thread: copyID)
        for key in ["role", "content", "completion_tokens", "tokens_per_second"] {
            #expect(copied.map { "\($0[key] ?? "nil")" } == stored.map { "\($0[key] ?? "nil")" }, "\(key)")
        }
        let listed = (try await server.get("/v1/threads").json()["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(listed == [copyID, id])
        // An imported thread goes on like any other.
        let events = try await Self.send(server, thread: copyID, "And a vegetable?")
        #expect(events.last?["type"] as? String == "done", "\(events)")

        // Refusals, each leaving no thread behind.
        let refusals: [([String: Any], Int)] = [
            (["messages": [["role": "tool", "content": "x"]]], 400),
            (["messages": [["role": "user"]]], 400),
            (["name": "x"], 400),
            (["preset": "wild", "messages": []], 400),
            (["model": "no-such-model", "messages": []], 404),
            (["version": 2, "messages": []], 400),
            (["messages": [["role": "assistant", "content": "x", "tokens_per_second": -1]]], 400),
        ]
        for (body, status) in refusals {
            let answer = try await server.post("/v1/threads/import", body)
            #expect(answer.status == status, "\(body): \(answer.text)")
        }
        #expect((try await server.get("/v1/threads").json()["data"] as? [Any])?.count == 2)
        #expect(try await server.get("/v1/threads/no-such-thread/export").status == 404)
    }

    /// `hearth serve` on `database` (a path, or a PostgreSQL URL) with SmolLM2, and the URL it
    /// listens on once it says so. `environment` adds to the test's own.
    static func serve(database: String?, environment: [String: String] = [:],
                      directory: TemporaryDirectory) async throws -> (Child, String) {
        var command = try ServeCommand(directory: directory)
        command.models = ["smollm2=\(try TestFiles.model(TestFiles.smolLM2))"]
        command.database = database.map { .named($0) } ?? .fromEnvironment
        command.environment = environment
        let server = try await ServeProcess(command)
        return (server.child, server.base)
    }

    @Test("kill -9 of hearth serve mid-stream, then a restart: every thread and completed message is there",
          arguments: StoreEngine.available)
    func killAndRestart(engine: StoreEngine) async throws {
        let directory = try TemporaryDirectory()
        // On PostgreSQL: the first server has --database without the password and PGPASSWORD,
        // the second has no --database, only HEARTH_DATABASE_URL (with the password).
        let database = try engine.newDatabase(in: directory)
        let first: (database: String, environment: [String: String])
        let second: (database: String?, environment: [String: String])
        switch engine {
        case .sqlite:
            first = (database, [:])
            second = (database, [:])
        case .postgres:
            let server = try PostgresTestServer.shared
            let url = try #require(URLComponents(string: database))
            first = (server.url(database: String(url.path.dropFirst()), withPassword: false), ["PGPASSWORD": server.password])
            second = (nil, ["HEARTH_DATABASE_URL": database])
        }
        func serve() async throws -> (Child, String) {
            try await Self.serve(database: first.database, environment: first.environment, directory: directory)
        }
        var (child, url) = try await serve()
        let client = RemoteServer(base: url)
        var threadIDs: [String] = []
        for _ in 0..<3 { threadIDs.append(try #require(try await client.post("/v1/threads", [:]).json()["id"] as? String)) }
        for id in threadIDs.prefix(2) {
            let answer = try await client.stream("/v1/threads/\(id)/messages", ["content": "Say hi."]) { _ in true }
            #expect(answer == 200)
        }
        // A third answer is streaming when the server is killed.
        var deltas = 0
        _ = try? await client.stream("/v1/threads/\(threadIDs[2])/messages", ["content": "Write a very long story about a dragon."]) { line in
            if try jsonObject(line)["type"] as? String == "delta" { deltas += 1 }
            if deltas == 3 { child.signal(SIGKILL) }
            return true
        }
        #expect(try await child.wait() == SIGKILL)

        (child, url) = try await Self.serve(database: second.database, environment: second.environment, directory: directory)
        defer { child.signal(SIGTERM) }
        #expect(child.outputText.contains("Chat threads in \(engine == .sqlite ? database : "postgres://")"))
        if engine == .postgres { #expect(!child.outputText.contains(try PostgresTestServer.shared.password)) }
        let restarted = RemoteServer(base: url)
        let listed = (try await restarted.get("/v1/threads").json()["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(Set(listed) == Set(threadIDs))
        for id in threadIDs.prefix(2) {
            let messages = try await restarted.get("/v1/threads/\(id)/messages").json()["data"] as? [[String: Any]] ?? []
            #expect(messages.map { $0["role"] as? String ?? "" } == ["user", "assistant"])
            let content = messages.last?["content"] as? String ?? ""
            #expect(content.count > 1)
        }
        let interrupted = try await restarted.get("/v1/threads/\(threadIDs[2])/messages").json()["data"] as? [[String: Any]] ?? []
        #expect(interrupted.map { $0["role"] as? String ?? "" } == ["user"])
        #expect(try await restarted.post("/v1/threads", [:]).json()["name"] as? String == "Chat 4")
    }

    @Test("hearth serve refuses a PostgreSQL database it cannot use, saying where and what to do, never the password",
          .enabled(if: PostgresTestServer.isInstalled, Comment(rawValue: PostgresTestServer.unavailableReason ?? "")))
    func unusableDatabase() async throws {
        let server = try PostgresTestServer.shared
        let directory = try TemporaryDirectory()
        let secret = "wrong-\(UInt32.random(in: .min ... .max))"
        let cases: [(arguments: [String], environment: [String: String], mentions: [String])] = [
            (["--database", "postgres://hearth:\(secret)@127.0.0.1:\(server.port)/postgres"], [:],
             ["127.0.0.1:\(server.port)", "password", "HEARTH_DATABASE_URL"]),
            ([], ["HEARTH_DATABASE_URL": "postgres://hearth:\(secret)@127.0.0.1:1/hearth"],
             ["127.0.0.1:1", "refused", "--database"]),
            (["--database", "postgres://hearth:\(secret)@127.0.0.1:notaport/hearth"], [:], ["--database", "URL"]),
        ]
        for (arguments, environment, mentions) in cases {
            var command = try ServeCommand(directory: directory)
            (command.models, command.database, command.arguments, command.environment) = ([], .fromEnvironment, arguments, environment)
            let child = try command.start()
            #expect(try await child.wait() == 1)
            let said = child.errorText + child.outputText
            for word in mentions { #expect(said.contains(word), "\(arguments) \(environment): \(said)") }
            #expect(!said.contains(secret), "the password is in: \(said)")
            #expect(!said.contains("Hearth listening"))
        }
    }
}
