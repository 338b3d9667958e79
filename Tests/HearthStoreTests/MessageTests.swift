import Foundation
import HearthCore
import HearthStore
import HearthTestSupport
import Testing

@Suite("Messages")
struct MessageTests {
    @Test("messages come back oldest first, with their roles, statistics and growing ids", arguments: StoreEngine.available)
    func order(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let other = try await store.createThread()
        var appended: [StoredMessage] = []
        appended.append(try await store.appendMessage(threadID: thread.id, role: "system", content: "Be brief."))
        for i in 0..<20 {
            _ = try await store.appendMessage(threadID: other.id, role: "user", content: "elsewhere \(i)")
            appended.append(try await store.appendMessage(threadID: thread.id, role: "user", content: "question \(i)"))
            appended.append(try await store.appendMessage(threadID: thread.id, role: "assistant", content: "answer \(i)",
                                                          completionTokens: i, tokensPerSecond: Double(i) + 0.25))
        }
        let stored = try await store.messages(threadID: thread.id)
        #expect(stored == appended)
        #expect(stored.map(\.id) == stored.map(\.id).sorted())
        #expect(Set(stored.map(\.id)).count == stored.count)
        #expect(stored.allSatisfy { $0.threadID == thread.id })
        #expect(stored[2].completionTokens == 0 && stored[2].tokensPerSecond == 0.25)
        #expect(stored[1].completionTokens == nil && stored[1].tokensPerSecond == nil)
        #expect(try await store.messages(threadID: other.id).count == 20)
    }

    @Test("a reasoning model's thoughts are kept beside its answer, byte for byte; other messages have none", arguments: StoreEngine.available)
    func reasoning(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let question = try await store.appendMessage(threadID: thread.id, role: "user", content: "Name a vegetable.")
        let thoughts = "The user wants a vegetable.\nCarrots 🥕 are common.\u{0}"
        let answer = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "A carrot.",
                                                   completionTokens: 12, tokensPerSecond: 3, reasoning: thoughts)
        let stored = try await store.messages(threadID: thread.id)
        #expect(stored == [question, answer])
        #expect(stored[0].reasoning == nil)
        #expect(stored[1].reasoning == thoughts)
        #expect(try await store.deleteLastAssistantMessage(threadID: thread.id)?.reasoning == thoughts)
    }

    @Test("text comes back byte for byte: Unicode, newlines, NUL characters, long messages", arguments: StoreEngine.available, [
        "", "plain", "line one\nline two\r\n\ttabbed", "emoji 👩🏽‍💻 and accents é ü", "a\u{0}b\u{0}",
        "'; DROP TABLE message; --", String(repeating: "long text ", count: 50_000),
        // PostgreSQL keeps NUL as DLE "0" and DLE as DLE DLE: text that looks like either.
        "\u{10}0 \u{10}\u{10} \u{10}", "\u{10}",
    ])
    func textRoundTrip(engine: StoreEngine, content: String) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread(systemPrompt: content)
        let message = try await store.appendMessage(threadID: thread.id, role: "assistant", content: content)
        let reopened = try await database.open()
        let stored = try #require(try await reopened.messages(threadID: thread.id).first)
        #expect(stored == message)
        #expect(stored.content.utf8.count == content.utf8.count)
        #expect(try await reopened.thread(id: thread.id)?.systemPrompt == content)
    }

    @Test("a name with a NUL character is kept whole", arguments: StoreEngine.available)
    func nameWithNUL(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread(model: "m\u{0}x")
        #expect(try await store.renameThread(id: thread.id, to: "a\u{0}b").name == "a\u{0}b")
        #expect(try await store.thread(id: thread.id)?.name == "a\u{0}b")
        #expect(try await store.thread(id: thread.id)?.model == "m\u{0}x")
    }

    @Test("deleteLastAssistantMessage removes the final answer only, for Regenerate", arguments: StoreEngine.available)
    func deleteLastAssistant(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        #expect(try await store.deleteLastAssistantMessage(threadID: thread.id) == nil)
        let question = try await store.appendMessage(threadID: thread.id, role: "user", content: "Why?")
        let answer = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "Because.",
                                                   completionTokens: 2, tokensPerSecond: 10)
        #expect(try await store.deleteLastAssistantMessage(threadID: thread.id) == answer)
        #expect(try await store.messages(threadID: thread.id) == [question])
        // The thread now ends with the user's question: an earlier answer is never taken instead.
        let second = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "Because, again.")
        let followUp = try await store.appendMessage(threadID: thread.id, role: "user", content: "And?")
        #expect(try await store.deleteLastAssistantMessage(threadID: thread.id) == nil)
        #expect(try await store.messages(threadID: thread.id) == [question, second, followUp])
        // A regenerated answer gets a new id, never the deleted one's.
        let regenerated = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "Since.")
        #expect(try await store.deleteLastAssistantMessage(threadID: thread.id) == regenerated)
        let again = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "Since, again.")
        #expect(again.id > regenerated.id)
    }

    @Test("clearAll deletes every message and keeps threads, names, settings and times", arguments: StoreEngine.available)
    func clearAll(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let a = try await store.createThread(preset: "code")
        let b = try await store.renameThread(id: try await store.createThread().id, to: "Named")
        _ = try await store.appendMessage(threadID: a.id, role: "user", content: "one")
        _ = try await store.appendMessage(threadID: b.id, role: "user", content: "two")
        let before = try await store.threads()
        try await store.clearAll()
        #expect(try await store.threads() == before)
        #expect(try await store.messages(threadID: a.id).isEmpty)
        #expect(try await store.messages(threadID: b.id).isEmpty)
        #expect(try database.count("message") == 0)
        // Ids go on growing after a clear.
        let next = try await store.appendMessage(threadID: a.id, role: "user", content: "three")
        #expect(next.id == 3)
    }

    @Test("after clearAll the deleted text is gone from the SQLite file and its write-ahead log")
    func clearAllScrubs() async throws {
        let file = try StoreFile()
        defer { withExtendedLifetime(file) {} }
        let store = try file.open()
        let thread = try await store.createThread()
        let secret = "correct-horse-battery-staple-4417"
        for _ in 0..<3 {
            _ = try await store.appendMessage(threadID: thread.id, role: "user", content: "my password is \(secret)")
            _ = try await store.appendMessage(threadID: thread.id, role: "assistant", content: String(repeating: "\(secret) ", count: 2000))
        }
        func fileHoldsSecret() -> Bool {
            [file.path, file.path + "-wal"].contains { path in
                guard let bytes = FileManager.default.contents(atPath: path) else { return false }
                return bytes.range(of: Data(secret.utf8)) != nil
            }
        }
        #expect(fileHoldsSecret())
        try await store.clearAll()
        #expect(!fileHoldsSecret())
        #expect(try file.integrityCheck() == ["ok"])
    }

    @Test("a role other than system, user or assistant is refused",
          arguments: StoreEngine.available, ["tool", "User", "", "assistant "])
    func invalidRole(engine: StoreEngine, role: String) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let error = await hearthError { _ = try await store.appendMessage(threadID: thread.id, role: role, content: "x") }
        let text = try #require(invalidArgumentText(error))
        #expect(text.contains("\"\(role)\"") && text.contains("system, user, assistant"))
        #expect(try database.count("message") == 0)
        #expect(try await store.thread(id: thread.id) == thread)
    }

    @Test("statistics that cannot be right are refused rather than stored", arguments: StoreEngine.available)
    func invalidStatistics(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let cases: [(Int?, Double?)] = [(-1, nil), (nil, -0.5), (nil, .nan), (nil, .infinity)]
        for (tokens, speed) in cases {
            let error = await hearthError {
                _ = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "x",
                                                  completionTokens: tokens, tokensPerSecond: speed)
            }
            #expect(invalidArgumentText(error) != nil)
        }
        #expect(try await store.messages(threadID: thread.id).isEmpty)
    }

    @Test("editing a question replaces its text and deletes everything after it, in this thread only", arguments: StoreEngine.available)
    func editMessage(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let other = try await store.createThread()
        let first = try await store.appendMessage(threadID: thread.id, role: "user", content: "Name a fruit.")
        let answer = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "A pear.")
        let elsewhere = try await store.appendMessage(threadID: other.id, role: "user", content: "Unrelated.")
        let second = try await store.appendMessage(threadID: thread.id, role: "user", content: "Another?")
        _ = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "A plum.")

        let edited = try await store.editMessage(threadID: thread.id, messageID: second.id, content: "A vegetable?")
        #expect(edited.id == second.id && edited.content == "A vegetable?" && edited.role == "user")
        #expect(edited.createdAt == second.createdAt)
        #expect(try await store.messages(threadID: thread.id) == [first, answer, edited])
        #expect(try await store.messages(threadID: other.id) == [elsewhere], "other threads keep their messages")
        #expect(try await store.threads().first?.id == thread.id, "an edit moves the thread to the top")

        let again = try await store.editMessage(threadID: thread.id, messageID: first.id, content: "Name a berry.")
        #expect(try await store.messages(threadID: thread.id) == [again])
        // The answer that follows gets a new id, never one of the deleted messages'.
        let next = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "A raspberry.")
        #expect(next.id > second.id)
    }

    @Test("only the thread's own user messages can be edited; a refused edit changes nothing", arguments: StoreEngine.available)
    func editRefused(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let other = try await store.createThread()
        let question = try await store.appendMessage(threadID: thread.id, role: "user", content: "Why?")
        let answer = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "Because.")
        let foreign = try await store.appendMessage(threadID: other.id, role: "user", content: "Elsewhere.")
        let text = invalidArgumentText(await hearthError { _ = try await store.editMessage(threadID: thread.id, messageID: answer.id, content: "x") })
        #expect(text?.contains("assistant") == true)
        for id in [foreign.id, 9999] {
            #expect(await hearthError { _ = try await store.editMessage(threadID: thread.id, messageID: id, content: "x") }
                    == .messageNotFound(threadID: thread.id, id: id))
        }
        #expect(HearthError.messageNotFound(threadID: "t", id: 7).message.contains("7"))
        #expect(try await store.messages(threadID: thread.id) == [question, answer])
        #expect(try await store.messages(threadID: other.id) == [foreign])
    }
}
