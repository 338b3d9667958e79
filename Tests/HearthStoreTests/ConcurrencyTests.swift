import Foundation
import HearthStore
import HearthTestSupport
import Testing

@Suite("Concurrent use")
struct ConcurrencyTests {
    @Test("50 tasks creating threads at once get Chat 1 to Chat 50, each once", arguments: StoreEngine.available)
    func concurrentCreates(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let threads = try await withThrowingTaskGroup(of: ChatThread.self) { group in
            for _ in 0..<50 { group.addTask { try await store.createThread() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(threads.map(\.name)) == Set((1...50).map { "Chat \($0)" }))
        #expect(Set(threads.map(\.id)).count == 50)
        #expect(try await store.threads().count == 50)
    }

    @Test("two stores on one database (as two processes would be) share the counter without clashes", arguments: StoreEngine.available)
    func twoStores(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let first = try await database.open()
        let second = try await database.open()
        let names = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<50 {
                let store = i % 2 == 0 ? first : second
                group.addTask { try await store.createThread().name }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(names) == Set((1...50).map { "Chat \($0)" }))
    }

    @Test("writers appending to one thread while readers list it lose nothing and keep each writer's order", arguments: StoreEngine.available)
    func concurrentAppends(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let other = try await database.open()
        let thread = try await store.createThread()
        let writers = 8, perWriter = 25
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let target = writer % 2 == 0 ? store : other
                    for n in 0..<perWriter {
                        _ = try await target.appendMessage(threadID: thread.id, role: "user", content: "\(writer):\(n)")
                    }
                }
            }
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<20 {
                        let seen = try await other.messages(threadID: thread.id)
                        // A reader sees a prefix of the final list, never a gap or a half-written row.
                        #expect(seen.map(\.id) == seen.map(\.id).sorted())
                        _ = try await store.threads()
                    }
                }
            }
            try await group.waitForAll()
        }
        let messages = try await store.messages(threadID: thread.id)
        #expect(messages.count == writers * perWriter)
        #expect(Set(messages.map(\.id)).count == messages.count)
        for writer in 0..<writers {
            let own = messages.map(\.content).filter { $0.hasPrefix("\(writer):") }
            #expect(own == (0..<perWriter).map { "\(writer):\($0)" })
        }
        #expect(try database.integrityCheck() == ["ok"])
    }
}

@Suite("Cancellation")
struct CancellationTests {
    @Test("a cancelled task's write throws CancellationError and writes nothing", arguments: StoreEngine.available)
    func cancelledWrite(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await store.appendMessage(threadID: thread.id, role: "user", content: "never")
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(try await store.messages(threadID: thread.id).isEmpty)
        #expect(try await store.thread(id: thread.id) == thread)
    }

    @Test("writes cancelled at random moments either happen whole or not at all", arguments: StoreEngine.available)
    func cancelledAtRandom(engine: StoreEngine) async throws {
        let database = try StoreDatabase(engine)
        defer { withExtendedLifetime(database) {} }
        let store = try await database.open()
        let thread = try await store.createThread()
        let long = String(repeating: "y", count: 200_000)
        var written: Set<Int64> = []
        var generator = SplitMix64(seed: 5)
        for _ in 0..<30 {
            let task = Task { try await store.appendMessage(threadID: thread.id, role: "assistant", content: long) }
            try await Task.sleep(for: .microseconds(Int.random(in: 0..<3000, using: &generator)))
            task.cancel()
            do {
                written.insert(try await task.value.id)
            } catch is CancellationError {
            }
        }
        let messages = try await store.messages(threadID: thread.id)
        #expect(Set(messages.map(\.id)) == written)
        #expect(messages.allSatisfy { $0.content == long })
        #expect(try database.integrityCheck() == ["ok"])
    }
}
