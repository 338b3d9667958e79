import Foundation
import HearthCore
import HearthStore
import HearthTestSupport
import Testing

@Suite("Chat threads")
struct ThreadTests {
    @Test("a new thread is named Chat N, has a lowercased UUID and equal created and updated times", arguments: StoreEngine.available)
    func create(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let before = Date()
        let thread = try await store.createThread(model: "smollm2", preset: "precise", systemPrompt: "Be brief.")
        #expect(thread.name == "Chat 1")
        #expect(UUID(uuidString: thread.id) != nil)
        #expect(thread.id == thread.id.lowercased())
        #expect(thread.model == "smollm2" && thread.preset == "precise" && thread.systemPrompt == "Be brief.")
        #expect(thread.createdAt == thread.updatedAt)
        // Cut to the millisecond, so at most 1 ms before the call started.
        #expect(thread.createdAt >= before.addingTimeInterval(-0.001) && thread.createdAt <= Date())
        #expect(try await store.thread(id: thread.id) == thread)
        #expect(try await store.messages(threadID: thread.id).isEmpty)
        #expect(try await store.createThread().name == "Chat 2")
    }

    @Test("the list puts the most recently changed thread first, whatever changed it", arguments: StoreEngine.available)
    func listOrder(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let a = try await store.createThread()
        let b = try await store.createThread()
        let c = try await store.createThread()
        // All of this happens within a few milliseconds: the order must not depend on the clock.
        #expect(try await store.threads().map(\.id) == [c.id, b.id, a.id])
        _ = try await store.appendMessage(threadID: a.id, role: "user", content: "hello")
        #expect(try await store.threads().map(\.id) == [a.id, c.id, b.id])
        _ = try await store.renameThread(id: b.id, to: "Bee")
        #expect(try await store.threads().map(\.id) == [b.id, a.id, c.id])
        _ = try await store.updateSettings(id: c.id, model: "gemma3", preset: nil, systemPrompt: nil)
        #expect(try await store.threads().map(\.id) == [c.id, b.id, a.id])
    }

    @Test("adding a message, renaming and changing settings move updatedAt forward, never createdAt", arguments: StoreEngine.available)
    func updatedAtBumps(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        try await Task.sleep(for: .milliseconds(5))
        let message = try await store.appendMessage(threadID: thread.id, role: "user", content: "hi")
        let afterMessage = try #require(try await store.thread(id: thread.id))
        #expect(afterMessage.createdAt == thread.createdAt)
        #expect(afterMessage.updatedAt == message.createdAt)
        #expect(afterMessage.updatedAt > thread.updatedAt)
        try await Task.sleep(for: .milliseconds(5))
        let renamed = try await store.renameThread(id: thread.id, to: "Renamed")
        #expect(renamed.updatedAt > afterMessage.updatedAt)
        try await Task.sleep(for: .milliseconds(5))
        let configured = try await store.updateSettings(id: thread.id, model: "m", preset: nil, systemPrompt: nil)
        #expect(configured.updatedAt > renamed.updatedAt)
        #expect(configured.createdAt == thread.createdAt)
    }

    @Test("rename trims the name and returns the stored thread", arguments: StoreEngine.available)
    func rename(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread(model: "m")
        let renamed = try await store.renameThread(id: thread.id, to: "  Trip to Lisbon \n")
        #expect(renamed.name == "Trip to Lisbon")
        #expect(renamed.model == "m")
        #expect(try await store.thread(id: thread.id) == renamed)
        // The limit counts characters as a reader sees them, not bytes or UTF-16 units.
        let thumbs = String(repeating: "👍🏽", count: ChatThread.maximumNameLength)
        #expect(try await store.renameThread(id: thread.id, to: thumbs).name == thumbs)
    }

    @Test("an empty, blank or over-long name is refused with a message saying why", arguments: StoreEngine.available, [
        ("", "empty"), ("   \t\n ", "empty"), (String(repeating: "a", count: 201), "201"),
    ])
    func invalidNames(engine: StoreEngine, example: (name: String, mentions: String)) async throws {
        let (name, mentions) = example
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let error = await hearthError { _ = try await store.renameThread(id: thread.id, to: name) }
        let text = try #require(invalidArgumentText(error))
        #expect(text.contains(mentions))
        #expect(error?.category == .input)
        #expect(try await store.thread(id: thread.id) == thread)
    }

    @Test("settings are replaced as a whole; blank model or preset names mean the default", arguments: StoreEngine.available)
    func settings(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        #expect(thread.model == nil && thread.preset == nil && thread.systemPrompt == nil)
        let set = try await store.updateSettings(id: thread.id, model: " smollm2 ", preset: "", systemPrompt: "Answer in French.")
        #expect(set.model == "smollm2" && set.preset == nil && set.systemPrompt == "Answer in French.")
        #expect(set.name == thread.name)
        let cleared = try await store.updateSettings(id: thread.id, model: nil, preset: nil, systemPrompt: nil)
        #expect(cleared.model == nil && cleared.preset == nil && cleared.systemPrompt == nil)
        // An empty system prompt is a choice ("none"), unlike nil ("the default"): it is kept.
        let none = try await store.updateSettings(id: thread.id, model: nil, preset: "code", systemPrompt: "")
        #expect(none.systemPrompt == "" && none.preset == "code")
        #expect(try await store.thread(id: thread.id) == none)
    }

    @Test("deleting a thread deletes its messages and leaves the other threads alone", arguments: StoreEngine.available)
    func deleteCascades(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let doomed = try await store.createThread()
        let kept = try await store.createThread()
        for i in 0..<3 {
            _ = try await store.appendMessage(threadID: doomed.id, role: "user", content: "doomed \(i)")
            _ = try await store.appendMessage(threadID: kept.id, role: "user", content: "kept \(i)")
        }
        try await store.deleteThread(id: doomed.id)
        #expect(try await store.thread(id: doomed.id) == nil)
        #expect(try await store.threads().map(\.id) == [kept.id])
        #expect(try await store.messages(threadID: kept.id).map(\.content) == ["kept 0", "kept 1", "kept 2"])
        #expect(try database.count("message") == 3)
        #expect(try database.messageCount(threadID: doomed.id) == 0)
    }

    @Test("numbers are never handed out twice: not after deletes, not after clearAll, not after reopening", arguments: StoreEngine.available)
    func counterOnlyGrows(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        do {
            let store = try await database.open()
            let one = try await store.createThread()
            let two = try await store.createThread()
            let three = try await store.createThread()
            #expect([one.name, two.name, three.name] == ["Chat 1", "Chat 2", "Chat 3"])
            try await store.deleteThread(id: two.id)
            #expect(try await store.createThread().name == "Chat 4")
            // Deleting the newest threads must not give their numbers back either.
            try await store.deleteThread(id: three.id)
            #expect(try await store.createThread().name == "Chat 5")
            try await store.clearAll()
            #expect(try await store.createThread().name == "Chat 6")
        }
        let reopened = try await database.open()
        #expect(try await reopened.createThread().name == "Chat 7")
        // The number comes from the counter alone: a thread renamed by hand to "Chat 9" does not
        // stop the next new thread being called Chat 9 as well.
        let renamed = try await reopened.renameThread(id: try await reopened.createThread().id, to: "Chat 9")
        #expect(renamed.name == "Chat 9")
        #expect(try await reopened.createThread().name == "Chat 9")
    }

    @Test("an unknown thread id is nil from thread(id:) and threadNotFound everywhere else", arguments: StoreEngine.available)
    func unknownThread(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let gone = try await store.createThread()
        try await store.deleteThread(id: gone.id)
        for id in [gone.id, "no-such-thread", ""] {
            #expect(try await store.thread(id: id) == nil)
            let expected = HearthError.threadNotFound(id: id)
            #expect(await hearthError { _ = try await store.renameThread(id: id, to: "x") } == expected)
            #expect(await hearthError { _ = try await store.updateSettings(id: id, model: nil, preset: nil, systemPrompt: nil) } == expected)
            #expect(await hearthError { try await store.deleteThread(id: id) } == expected)
            #expect(await hearthError { _ = try await store.messages(threadID: id) } == expected)
            #expect(await hearthError { _ = try await store.appendMessage(threadID: id, role: "user", content: "x") } == expected)
            #expect(await hearthError { _ = try await store.deleteLastAssistantMessage(threadID: id) } == expected)
            #expect(await hearthError { _ = try await store.editMessage(threadID: id, messageID: 1, content: "x") } == expected)
        }
        #expect(HearthError.threadNotFound(id: "abc").category == .input)
        #expect(HearthError.threadNotFound(id: "abc").message.contains("abc"))
        #expect(try await store.threads().isEmpty)
    }

    @Test("threads and messages read after reopening equal what the writes returned", arguments: StoreEngine.available)
    func roundTripAfterReopen(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let thread: ChatThread
        let messages: [StoredMessage]
        do {
            let store = try await database.open()
            _ = try await store.createThread()
            let created = try await store.createThread(model: "smollm2", preset: "creative", systemPrompt: "Rhyme.")
            let user = try await store.appendMessage(threadID: created.id, role: "user", content: "A poem, please")
            let assistant = try await store.appendMessage(threadID: created.id, role: "assistant", content: "Roses…",
                                                          completionTokens: 37, tokensPerSecond: 123.456789012345)
            thread = try #require(try await store.thread(id: created.id))
            messages = [user, assistant]
        }
        let reopened = try await database.open()
        #expect(try await reopened.thread(id: thread.id) == thread)
        #expect(try await reopened.messages(threadID: thread.id) == messages)
        #expect(try await reopened.threads().first == thread)
        // And through JSON, as the server sends them.
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        #expect(try decoder.decode(ChatThread.self, from: encoder.encode(thread)) == thread)
        #expect(try decoder.decode([StoredMessage].self, from: encoder.encode(messages)) == messages)
    }

    @Test("defaultPath: HEARTH_DATA_DIR, then XDG_DATA_HOME, then ~/.local/share")
    func defaultPath() {
        #expect(SQLiteChatStore.defaultPath(environment: ["HEARTH_DATA_DIR": "/srv/hearth", "XDG_DATA_HOME": "/x", "HOME": "/home/u"])
            == "/srv/hearth/hearth.sqlite")
        #expect(SQLiteChatStore.defaultPath(environment: ["HEARTH_DATA_DIR": "/srv/hearth/"]) == "/srv/hearth/hearth.sqlite")
        #expect(SQLiteChatStore.defaultPath(environment: ["XDG_DATA_HOME": "/x/data", "HOME": "/home/u"]) == "/x/data/hearth/hearth.sqlite")
        #expect(SQLiteChatStore.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.local/share/hearth/hearth.sqlite")
        // Empty means unset, and a relative XDG_DATA_HOME is ignored, as the XDG specification says.
        #expect(SQLiteChatStore.defaultPath(environment: ["HEARTH_DATA_DIR": "", "XDG_DATA_HOME": "", "HOME": "/home/u"])
            == "/home/u/.local/share/hearth/hearth.sqlite")
        #expect(SQLiteChatStore.defaultPath(environment: ["XDG_DATA_HOME": "relative/data", "HOME": "/home/u"])
            == "/home/u/.local/share/hearth/hearth.sqlite")
    }

    @Test("search finds threads by name or by any message's text, ignoring case and diacritics, newest first", arguments: StoreEngine.available)
    func search(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let trip = try await store.renameThread(id: try await store.createThread().id, to: "Trip to Zürich")
        let bread = try await store.createThread()
        _ = try await store.appendMessage(threadID: bread.id, role: "user", content: "How do I bake sourdough?")
        _ = try await store.appendMessage(threadID: bread.id, role: "assistant", content: "Start with a levain.\u{0}Then ZURICH-style crust.")
        let empty = try await store.createThread()

        #expect(try await store.threads(matching: "zurich").map(\.id) == [bread.id, trip.id], "ü matches u; the text after a NUL counts")
        #expect(try await store.threads(matching: "SOURDOUGH").map(\.id) == [bread.id])
        #expect(try await store.threads(matching: "levain").map(\.id) == [bread.id], "answers are searched too")
        #expect(try await store.threads(matching: "trip to").map(\.id) == [trip.id])
        #expect(try await store.threads(matching: "50%_").isEmpty, "LIKE wildcards are plain characters")
        #expect(try await store.threads(matching: "nothing like this").isEmpty)
        #expect(try await store.threads(matching: "  ").map(\.id) == [empty.id, bread.id, trip.id], "a blank search lists every thread")
        #expect(try await store.threads(matching: " levain ").map(\.id) == [bread.id], "surrounding spaces are ignored")
    }

    @Test("import makes a new thread with the messages in order, in one transaction", arguments: StoreEngine.available)
    func importThread(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let existing = try await store.createThread()
        let messages = [
            NewMessage(role: "system", content: "Be brief."),
            NewMessage(role: "user", content: "Name a fruit."),
            NewMessage(role: "assistant", content: "A pear.\u{0}", completionTokens: 3, tokensPerSecond: 12.5,
                       reasoning: "Fruit: pear 🍐"),
        ]
        let imported = try await store.importThread(name: "  Fruit chat ", model: "smollm2", preset: "precise",
                                                    systemPrompt: "Answer in one word.", messages: messages)
        #expect(imported.name == "Fruit chat" && imported.model == "smollm2" && imported.preset == "precise")
        #expect(imported.systemPrompt == "Answer in one word.")
        #expect(try await store.thread(id: imported.id) == imported)
        #expect(try await store.threads().map(\.id) == [imported.id, existing.id], "an imported thread comes first")
        let stored = try await store.messages(threadID: imported.id)
        #expect(stored.map { NewMessage(role: $0.role, content: $0.content, completionTokens: $0.completionTokens,
                                        tokensPerSecond: $0.tokensPerSecond, reasoning: $0.reasoning) } == messages)
        #expect(stored.map(\.id) == stored.map(\.id).sorted())

        // Without a name it takes the next number; with no messages it is an empty thread.
        let unnamed = try await store.importThread(name: nil, messages: [])
        #expect(unnamed.name == "Chat 2")
        #expect(try await store.messages(threadID: unnamed.id).isEmpty)

        // A bad role, bad statistics or a bad name leave nothing behind.
        let before = try await store.threads()
        let count = try database.count("message")
        let badRole = messages + [NewMessage(role: "tool", content: "x")]
        #expect(invalidArgumentText(await hearthError { _ = try await store.importThread(name: nil, messages: badRole) }) != nil)
        let badSpeed = [NewMessage(role: "assistant", content: "x", tokensPerSecond: -1)]
        #expect(invalidArgumentText(await hearthError { _ = try await store.importThread(name: nil, messages: badSpeed) }) != nil)
        #expect(invalidArgumentText(await hearthError { _ = try await store.importThread(name: "   ", messages: messages) }) != nil)
        #expect(try await store.threads() == before)
        #expect(try database.count("message") == count)
        #expect(try await store.createThread().name == "Chat 3", "a refused import takes no number")
    }
}
