import Foundation
import Hearth
import HearthTestSupport
import Synchronization
import Testing

/// SmolLM2 loaded once through the SDK for the whole suite.
let sharedSmolLM2 = Result {
    try LocalModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2, contextLength: 1024)
}

@Suite("Chat sessions on SmolLM2")
struct ChatSessionTests {
    @Test("a second turn evaluates only its new tokens")
    func secondTurnReusesTheCache() async throws {
        let model = try sharedSmolLM2.get()
        let chat = model.chat(options: GenerationOptions(sampling: .greedy, maxTokens: 64))
        let first = try await chat.respond(to: "What is 2+2?")
        #expect(first.text == "The answer to this classic math problem is 4.")
        #expect(first.finishReason == .stop)
        let one = try #require(first.statistics)
        #expect(one.cachedPromptTokens == 0)

        let second = try await chat.respond(to: "And 3+3?")
        #expect(!second.text.isEmpty)
        let two = try #require(second.statistics)
        // The first turn's prompt and answer are in the cache; only the new user message and the
        // template around it are evaluated.
        #expect(two.cachedPromptTokens >= one.promptTokens + one.completionTokens - 1)
        #expect(two.evaluatedPromptTokens == two.promptTokens - two.cachedPromptTokens)
        #expect(two.evaluatedPromptTokens < 20)
        #expect(chat.messages.map(\.role) == [.user, .assistant, .user, .assistant])
        #expect(chat.lastStatistics == two)
    }

    @Test("Configuration.cacheTypes: a chat on a Q8_0 cache keeps its turns, with the cache's size on the model")
    func quantizedCacheChat() async throws {
        let hearth = Hearth(configuration: .init(threads: 2, contextLength: 512, cacheTypes: KVCacheTypes(keys: .q8_0, values: .q8_0)))
        let model = try await hearth.loadModel(TestFiles.model(TestFiles.smolLM2), pullIfMissing: false)
        #expect(model.cacheTypes == KVCacheTypes(keys: .q8_0, values: .q8_0))
        // 30 layers of 3 key/value heads, a key and a value of two 34-byte blocks each, 512 positions.
        #expect(model.cacheBytesPerContext == 30 * 3 * 2 * 68 * 512)
        let chat = model.chat(options: GenerationOptions(sampling: .greedy, maxTokens: 32))
        let first = try await chat.respond(to: "What is 2+2?")
        #expect(first.text.contains("4"), "\(first.text)")
        let second = try await chat.respond(to: "And 3+3?")
        #expect(!second.text.isEmpty)
        #expect(try #require(second.statistics).cachedPromptTokens > 0)
    }

    @Test("regenerate answers the last message again from the cache")
    func regenerate() async throws {
        let model = try sharedSmolLM2.get()
        let chat = model.chat(options: .greedy)
        let first = try await chat.respond(to: "What is 2+2?")
        let again = try await chat.regenerate().collect()
        #expect(again.text == first.text)
        let stats = try #require(again.statistics)
        #expect(stats.cachedPromptTokens == stats.promptTokens - 1)
        #expect(chat.messages.count == 2)
        #expect(chat.messages.last == ChatMessage(role: .assistant, content: first.text))

        let empty = model.chat()
        await #expect(throws: HearthError.self) { try await empty.regenerate().collect() }
    }

    @Test("reset forgets the conversation but keeps the system prompt")
    func reset() async throws {
        let model = try sharedSmolLM2.get()
        let chat = model.chat(system: "Be brief.", options: GenerationOptions(sampling: .greedy, maxTokens: 48))
        _ = try await chat.respond(to: "What is 2+2?")
        chat.reset()
        #expect(chat.messages.isEmpty)
        #expect(chat.system == "Be brief.")
        let after = try await chat.respond(to: "What is 2+2?")
        #expect(after.text.hasPrefix("The answer to this classic math problem is 4."))
        #expect(chat.messages.count == 2)
        // The system prompt's tokens are still in the cache.
        #expect(try #require(after.statistics).cachedPromptTokens > 5)
    }

    @Test("cancelling the consuming task stops generation within a token")
    func cancellation() async throws {
        // A model of its own: its usage counts only this test's tokens.
        let model = try LocalModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2, contextLength: 2048)
        var options = GenerationOptions.greedy
        options.maxTokens = 1500
        // The generator does not wait for its reader: on a busy host it can write the whole answer
        // before the reader has seen five tokens, and then there is nothing left to cancel. Such
        // a try says nothing about cancellation and is made again.
        for _ in 1...3 {
            let chat = model.chat(options: .greedy)
            let requestsBefore = model.usage.requests
            let atCancel = Mutex<LocalModel.Usage?>(nil)
            let task = Task {
                var tokens = 0
                for try await chunk in chat.stream("Write a long story about a dragon.", options: options) {
                    if chunk.token != nil { tokens += 1 }
                    if tokens == 5, atCancel.withLock({ $0 == nil }) {
                        atCancel.withLock { $0 = model.usage }
                        // The reader keeps waiting on the stream, so cancelling its task reaches
                        // the generator at once, through the stream's cancellation handler.
                        withUnsafeCurrentTask { $0?.cancel() }
                    }
                }
            }
            _ = await task.result
            await model.waitUntilIdle()
            let before = try #require(atCancel.withLock { $0 })
            if before.requests > requestsBefore { continue }
            // The token being computed when the task was cancelled may still finish, and one more
            // may have been counted between reading the total and cancelling.
            #expect(model.usage.completionTokens - before.completionTokens <= 2)
            // A cancelled answer is not kept; the question waits for regenerate() or a new message.
            #expect(chat.messages.map(\.role) == [.user])
            let next = try await chat.respond(to: "What is 2+2?")
            #expect(next.text == "The answer to this classic math problem is 4.")
            #expect(chat.messages.map(\.role) == [.user, .assistant])
            return
        }
        Issue.record("Three times the whole answer was written before its reader saw five tokens.")
    }

    @Test("two sessions on one model take turns and each gets its own answer")
    func concurrentSessions() async throws {
        let model = try sharedSmolLM2.get()
        let options = GenerationOptions(sampling: .greedy, maxTokens: 48)
        async let a = model.chat(options: options).respond(to: "What is 2+2?")
        async let b = model.chat(options: options).respond(to: "What is the capital of France?")
        let (first, second) = try await (a, b)
        #expect(first.text == "The answer to this classic math problem is 4.")
        let alone = try await model.chat(options: options).respond(to: "What is the capital of France?")
        #expect(second.text == alone.text)
    }

    @Test("a long conversation drops its oldest turns, or throws when told to")
    func overflow() async throws {
        let model = try LocalModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2, contextLength: 160)
        let chat = model.chat(system: "Be brief.", options: GenerationOptions(sampling: .greedy, maxTokens: 24))
        for question in ["What is 2+2?", "What is the capital of France?", "Name a primary colour.",
                         "What is 10 times 10?", "Which planet is largest?", "What is water made of?"] {
            let answer = try await chat.respond(to: question)
            #expect(!answer.text.isEmpty)
            #expect(try #require(answer.statistics).promptTokens < 160)
        }
        #expect(chat.messages.count == 12)

        chat.overflowPolicy = .error
        await #expect(throws: HearthError.self) { try await chat.respond(to: "And one more?") }
        let long = String(repeating: "word ", count: 400)
        await #expect {
            try await model.respond(to: long)
        } throws: { error in
            guard case HearthError.contextOverflow(_, let limit) = error else { return false }
            return limit == 160
        }
    }
}

/// A count shared between a generating task and the test.
final class Counter: Sendable {
    private let storage = Mutex(0)
    func increment() { storage.withLock { $0 += 1 } }
    var value: Int { storage.withLock { $0 } }
}
