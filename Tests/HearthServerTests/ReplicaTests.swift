import AsyncHTTPClient
import Foundation
import HearthTestSupport
import HubEmulator
import Synchronization
import Testing

/// `hearth serve` replicas on one PostgreSQL database behind nginx (round robin), all on
/// loopback: each replica a process of its own, named replica-1, replica-2… (its
/// X-Hearth-Replica header says which answered).
final class ReplicaCluster: @unchecked Sendable {
    let directory: TemporaryDirectory
    /// The database's URL, password included.
    let database: String
    let replicas: [(name: String, child: Child, client: RemoteServer)]
    let nginx: NginxTestServer

    /// What clients use: nginx.
    var client: RemoteServer { RemoteServer(base: nginx.base) }

    /// Starts `count` replicas side by side (their migrations race for the database's lock),
    /// then nginx in front of them. They serve SmolLM2 as "smollm2" unless `models` says
    /// otherwise (`--model` arguments), with a Hugging Face cache of their own unless
    /// `environment` names one, and as `user` when given (the tests then run as root).
    init(count: Int = 2, grace: Double = 30, models: [String]? = nil, environment extra: [String: String] = [:],
         user: String? = nil, binary: URL? = nil) async throws {
        directory = try TemporaryDirectory()
        let database = try StoreEngine.postgres.newDatabase(in: directory)
        self.database = database
        let models = try models ?? ["smollm2=\(TestFiles.model(TestFiles.smolLM2))"]
        let directory = self.directory
        var children: [(name: String, child: Child)] = []
        for index in 1...count {
            var command = try ServeCommand(directory: directory)
            command.database = .named(database)
            (command.threads, command.contextLength, command.replica, command.grace) = (1, 1024, "replica-\(index)", grace)
            (command.models, command.user, command.binary) = (models, user, binary)
            command.environment = ["HF_HUB_CACHE": directory.file("hub").path].merging(extra) { _, new in new }
            let child = try command.start()
            child.killWhenTestsEnd()
            children.append(("replica-\(index)", child))
        }
        var started: [(String, Child, RemoteServer)] = []
        do {
            for (name, child) in children { started.append((name, child, RemoteServer(base: try await child.listeningURL()))) }
        } catch {
            for (_, child) in children { child.signal(SIGKILL) }
            throw error
        }
        replicas = started.map { ($0.0, $0.1, $0.2) }
        nginx = try await NginxTestServer(upstreams: replicas.map { String($0.client.base.dropFirst("http://".count)) })
    }

    func replica(_ name: String) throws -> (name: String, child: Child, client: RemoteServer) {
        try #require(replicas.first { $0.name == name }, "no replica \(name)")
    }

    /// Starts a cluster, runs `body` with it and stops it, whatever `body` does.
    static func run(count: Int = 2, grace: Double = 30, models: [String]? = nil, environment: [String: String] = [:],
                    user: String? = nil, binary: URL? = nil, _ body: (ReplicaCluster) async throws -> Void) async throws {
        let cluster = try await ReplicaCluster(count: count, grace: grace, models: models, environment: environment, user: user,
                                               binary: binary)
        do {
            try await body(cluster)
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    func stop() async {
        for replica in replicas where replica.child.isRunning {
            replica.child.signal(SIGKILL)
            _ = try? await replica.child.wait()
        }
        await nginx.stop()
    }
}

extension HTTPAnswer {
    /// The replica that answered, from its X-Hearth-Replica header.
    var replica: String? { headers.first(name: "X-Hearth-Replica") }
}

/// A thread message through `client`: the status, the replica that answered, and the stored
/// answer's text when the stream ended with it. `onDelta` gets the count of deltas so far.
func sendMessage(_ client: RemoteServer, thread: String, _ content: String,
                 onDelta: (Int) -> Void = { _ in }) async throws -> (status: Int, replica: String?, answer: String?) {
    var replica: String?
    var done: String?
    var deltas = 0
    let status = try await client.stream("/v1/threads/\(thread)/messages", ["content": content],
                                         onHead: { replica = $0.first(name: "X-Hearth-Replica") }) { line in
        let event = try jsonObject(line)
        switch event["type"] as? String {
        case "delta":
            deltas += 1
            onDelta(deltas)
        case "done": done = (event["message"] as? [String: Any])?["content"] as? String
        default: break
        }
        return true
    }
    return (status, replica, done)
}

@Suite("Replicas on PostgreSQL behind nginx", .serialized,
       .enabled(if: (PostgresTestServer.isInstalled && NginxTestServer.isInstalled) || ProcessInfo.processInfo.environment["CI"] != nil,
                Comment(rawValue: PostgresTestServer.unavailableReason ?? NginxTestServer.unavailableReason ?? "")))
struct ReplicaTests {
    @Test("200 threads created through nginx at once get 200 distinct names, from both replicas; each replica lists them all")
    func distinctNames() async throws {
        try await ReplicaCluster.run { cluster in
            let client = cluster.client
            let created = try await withThrowingTaskGroup(of: (name: String, replica: String).self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        let answer = try await client.post("/v1/threads", [:])
                        #expect(answer.status == 201 || answer.status == 200, "\(answer.text)")
                        return (try #require(try answer.json()["name"] as? String), try #require(answer.replica))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let names = created.map(\.name)
            #expect(created.count == 200)
            #expect(Set(names).count == 200, "duplicate names: \(Dictionary(grouping: names, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted())")
            #expect(names.allSatisfy { $0.wholeMatch(of: /Chat \d+/) != nil })
            let perReplica = Dictionary(grouping: created, by: \.replica).mapValues(\.count)
            #expect(Set(perReplica.keys) == ["replica-1", "replica-2"], "\(perReplica)")
            #expect(perReplica.values.allSatisfy { $0 >= 50 }, "round robin should share them: \(perReplica)")
            for replica in cluster.replicas {
                let listed = try await replica.client.get("/v1/threads").json()["data"] as? [[String: Any]] ?? []
                #expect(Set(listed.compactMap { $0["name"] as? String }) == Set(names), "\(replica.name) lists \(listed.count)")
            }
        }
    }

    @Test("a thread begun on one replica is read, answered and renamed on the other, and read back on the first")
    func crossReplica() async throws {
        try await ReplicaCluster.run { cluster in
            let one = try cluster.replica("replica-1").client
            let two = try cluster.replica("replica-2").client
            let thread = try #require(try await one.post("/v1/threads", [:]).json()["id"] as? String)
            let first = try await sendMessage(one, thread: thread, "Say hi.")
            #expect(first.status == 200 && first.replica == "replica-1")
            let firstAnswer = try #require(first.answer)

            let seenOnTwo = try await two.get("/v1/threads/\(thread)/messages").json()["data"] as? [[String: Any]] ?? []
            #expect(seenOnTwo.map { $0["role"] as? String } == ["user", "assistant"])
            #expect(seenOnTwo.last?["content"] as? String == firstAnswer)

            let second = try await sendMessage(two, thread: thread, "Now say bye.")
            #expect(second.status == 200 && second.replica == "replica-2")
            let secondAnswer = try #require(second.answer)
            #expect(try await two.send(.PATCH, "/v1/threads/\(thread)", body: #"{"name": "Shared"}"#).status == 200)

            let backOnOne = try await one.get("/v1/threads/\(thread)/messages").json()["data"] as? [[String: Any]] ?? []
            #expect(backOnOne.map { $0["content"] as? String } == ["Say hi.", firstAnswer, "Now say bye.", secondAnswer])
            #expect(try await one.get("/v1/threads/\(thread)").json()["name"] as? String == "Shared")
        }
    }

    @Test("kill -9 of the replica streaming an answer loses no completed message, and nginx sends the next requests to the other")
    func killOneReplica() async throws {
        try await ReplicaCluster.run { cluster in
            let client = cluster.client
            // Completed messages on both replicas.
            var completed: [String: [String]] = [:]
            for index in 0..<4 {
                let thread = try #require(try await client.post("/v1/threads", [:]).json()["id"] as? String)
                let sent = try await sendMessage(client, thread: thread, "Say hi to number \(index).")
                completed[thread] = ["Say hi to number \(index).", try #require(sent.answer)]
            }
            // A long answer through nginx; the replica streaming it is killed at its third token.
            let thread = try #require(try await client.post("/v1/threads", [:]).json()["id"] as? String)
            var victim: String?
            _ = try? await client.stream("/v1/threads/\(thread)/messages", ["content": "Write a very long story about a dragon."],
                                         onHead: { victim = $0.first(name: "X-Hearth-Replica") }) { line in
                if try jsonObject(line)["type"] as? String == "delta", let name = victim,
                   let replica = cluster.replicas.first(where: { $0.name == name }), replica.child.isRunning {
                    replica.child.signal(SIGKILL)
                }
                return true
            }
            let killed = try cluster.replica(try #require(victim))
            #expect(try await killed.child.wait() == SIGKILL)
            let survivor = try #require(cluster.replicas.first { $0.name != killed.name })

            // Every request after it goes to the survivor, and succeeds.
            for _ in 0..<6 {
                let answer = try await client.get("/v1/threads")
                #expect(answer.status == 200 && answer.replica == survivor.name, "\(answer.status) from \(answer.replica ?? "?")")
            }
            for (id, messages) in completed {
                let stored = try await client.get("/v1/threads/\(id)/messages").json()["data"] as? [[String: Any]] ?? []
                #expect(stored.map { $0["content"] as? String ?? "" } == messages, "thread \(id)")
            }
            // The interrupted answer is not stored; its question is, and the thread goes on elsewhere.
            let interrupted = try await client.get("/v1/threads/\(thread)/messages").json()["data"] as? [[String: Any]] ?? []
            #expect(interrupted.map { $0["role"] as? String ?? "" } == ["user"])
            let retried = try await sendMessage(client, thread: thread, "Say hi instead.")
            #expect(retried.status == 200 && retried.replica == survivor.name && retried.answer != nil)
        }
    }

    @Test("SIGTERM drains a replica: /health says draining, new work goes to the other, the answer in progress finishes and is stored, then it exits")
    func drain() async throws {
        // A grace of minutes: on a busy machine the story may take that long to finish.
        try await ReplicaCluster.run(grace: 600) { cluster in
            let leaving = try cluster.replica("replica-1")
            let staying = try cluster.replica("replica-2")
            #expect(try await leaving.client.get("/health").json()["status"] as? String == "ok")
            let thread = try #require(try await leaving.client.post("/v1/threads", [:]).json()["id"] as? String)
            let deltas = Atomic<Int>(0)
            let streaming = Task {
                try await sendMessage(leaving.client, thread: thread, "Write a very long story about a dragon.") { count in
                    deltas.store(count, ordering: .relaxed)
                }
            }
            let deadline = ContinuousClock.now + .seconds(600)
            while deltas.load(ordering: .relaxed) < 2 {
                try #require(ContinuousClock.now < deadline && !streaming.isCancelled, "the answer did not start streaming")
                try await Task.sleep(for: .milliseconds(10))
            }
            leaving.child.signal(SIGTERM)
            var health = try await leaving.client.get("/health")
            while health.status != 503, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                health = try await leaving.client.get("/health")
            }

            // While its answer streams: draining to a load balancer, new work refused with 503.
            #expect(health.status == 503, "\(health.text)")
            #expect(try health.json()["status"] as? String == "draining")
            while !leaving.child.errorText.contains("Draining:"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(leaving.child.errorText.contains("Draining: 1 request still running"), "\(leaving.child.errorText)")
            let refused = try await leaving.client.post("/v1/threads", [:])
            #expect(refused.status == 503 && refused.text.contains("shutting down"), "\(refused.text)")
            #expect(refused.headers.first(name: "Retry-After") != nil)
            for _ in 0..<4 {
                let created = try await cluster.client.post("/v1/threads", [:])
                #expect(created.status == 201 || created.status == 200)
                #expect(created.replica == staying.name)
            }
            let sent = try await streaming.value
            #expect(sent.status == 200 && sent.replica == leaving.name)
            let answer = try #require(sent.answer, "the answer ran to its end")
            let stored = try await staying.client.get("/v1/threads/\(thread)/messages").json()["data"] as? [[String: Any]] ?? []
            #expect(stored.map { $0["role"] as? String ?? "" } == ["user", "assistant"])
            #expect(stored.last?["content"] as? String == answer)
            #expect(try await leaving.child.wait() == 0)
            #expect(!canConnect(port: Int(leaving.client.base.split(separator: ":").last ?? "") ?? 0))
        }
    }

    @Test("replicas share one read-only model cache: they load and answer from it, write nothing into it, and a pull into it is a clear error")
    func sharedReadOnlyCache() async throws {
        // The cache is filled once, by a pull from the Hub emulator, then made read-only to the
        // replicas: they run as nobody when the tests run as root, else it loses its write bits.
        let repo = HubEmulator.Repo("test-org/SmolLM2-GGUF", files: [.init("SmolLM2-135M-Instruct.Q4_1.gguf",
                                                                             contentsOf: try TestFiles.modelURL(TestFiles.smolLM2))],
                                    tags: ["gguf"])
        let other = HubEmulator.Repo("test-org/other-GGUF", files: [.init("other-Q8_0.gguf", try tinyModelBytes())], tags: ["gguf"])
        let emulator = try HubEmulator(repos: [repo, other])
        try await emulator.start()
        defer { Task { await emulator.stop() } }
        // Under a folder every user may enter: the cache, and a copy of hearth (with its
        // resources) that nobody may run wherever the package is checked out.
        let root = URL(fileURLWithPath: "/tmp/hearth-shared-\(UUID().uuidString.prefix(8))")
        defer {
            try? Self.run("/bin/chmod", ["-R", "u+w", root.path])
            try? FileManager.default.removeItem(at: root)
        }
        let shared = root.appendingPathComponent("hub")
        let bin = root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let built = try TestFiles.hearthBinary
        for name in try FileManager.default.contentsOfDirectory(atPath: built.deletingLastPathComponent().path)
        where name == built.lastPathComponent || name.hasSuffix(".resources") {
            try FileManager.default.copyItem(at: built.deletingLastPathComponent().appendingPathComponent(name), to: bin.appendingPathComponent(name))
        }
        try Self.run("/bin/chmod", ["-R", "a+rX", root.path])
        let scratch = try TemporaryDirectory()
        var environment = ProcessInfo.processInfo.environment
        environment["HF_HUB_CACHE"] = shared.path
        environment["HF_ENDPOINT"] = emulator.endpoint.absoluteString
        environment["HF_HUB_OFFLINE"] = nil
        let pull = try Child(try TestFiles.hearthBinary, ["pull", repo.id], environment: environment, directory: scratch)
        try #require(try await pull.wait() == 0, "\(pull.errorText)")
        let asRoot = geteuid() == 0
        try Self.run("/bin/chmod", ["-R", asRoot ? "a+rX,go-w" : "a-w", shared.path])
        let before = try Self.listing(shared)

        try await ReplicaCluster.run(models: [repo.id], environment: ["HF_HUB_CACHE": shared.path,
                                                                                "HF_ENDPOINT": emulator.endpoint.absoluteString,
                                                                                "HF_HUB_OFFLINE": "0"],
                                               user: asRoot ? "nobody" : nil, binary: bin.appendingPathComponent(built.lastPathComponent)) { cluster in
            var answeredBy = Set<String>()
            for _ in 0..<4 {
                let answer = try await cluster.client.post("/v1/completions", ["model": repo.id, "prompt": "The sea is", "max_tokens": 4])
                #expect(answer.status == 200, "\(answer.text)")
                if let replica = answer.replica { answeredBy.insert(replica) }
            }
            #expect(answeredBy == ["replica-1", "replica-2"])
            #expect(try Self.listing(shared) == before, "the replicas wrote into the shared cache")

            let refused = try await cluster.client.post("/api/pull", ["model": other.id, "stream": false])
            #expect(refused.status >= 400, "\(refused.text)")
            #expect(refused.text.contains(shared.path) && refused.text.contains("cannot be written"), "\(refused.text)")
            #expect(try Self.listing(shared) == before)
            for replica in cluster.replicas { #expect(replica.child.isRunning) }
        }
    }

    /// Every file and folder under `root` with its size and modification time.
    static func listing(_ root: URL) throws -> [String] {
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey, .isSymbolicLinkKey]
        let enumerator = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: keys))
        var lines: [String] = []
        for case let url as URL in enumerator {
            let values = try url.resourceValues(forKeys: Set(keys))
            lines.append("\(url.path) \(values.fileSize ?? -1) \(values.contentModificationDate?.timeIntervalSince1970 ?? 0)")
        }
        return lines.sorted()
    }

    static func run(_ executable: String, _ arguments: [String]) throws {
        let (status, _, errors) = try Child.run(URL(fileURLWithPath: executable), arguments)
        try #require(status == 0, "\(executable) \(arguments) exited \(status): \(String(decoding: errors, as: UTF8.self))")
    }

    /// HEARTH_LOAD_SECONDS and HEARTH_LOAD_CLIENTS run a longer or wider load by hand
    /// (scripts/load-test-replicas, for docs/PERFORMANCE.md).
    @Test("a bounded load through nginx on both replicas: every request answered, no message lost")
    func load() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = environment["HEARTH_LOAD_SECONDS"] ?? "20"
        let clients = environment["HEARTH_LOAD_CLIENTS"] ?? "8"
        try await ReplicaCluster.run { cluster in
            let script = TestFiles.packageRoot.appendingPathComponent("Tests/HearthServerTests/replica_load.py")
            let child = try Child(URL(fileURLWithPath: "/usr/bin/env"),
                                  ["python3", script.path, cluster.nginx.base] + cluster.replicas.map(\.client.base)
                                    + ["--seconds", seconds, "--clients", clients],
                                  environment: environment, directory: cluster.directory)
            let status = try await child.wait()
            try #require(status == 0, "replica_load.py exited \(status): \(child.errorText)")
            let line = try #require(child.outputText.split(separator: "\n").last)
            let report = try jsonObject(String(line))
            let byReplica = report["by_replica"] as? [String: Int] ?? [:]
            print("""
                Replica load: \(clients) clients for \(report["seconds"] ?? "?") s through nginx on 2 replicas (PostgreSQL), \
                \(ProcessInfo.processInfo.activeProcessorCount) cores
                | requests | requests/s | answers/s | answer p50 / p95 (s) | errors | messages checked | lost | by replica |
                | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
                | \(report["requests"] ?? "?") | \(report["requests_per_second"] ?? "?") | \(report["answers_per_second"] ?? "?") \
                | \(report["answer_seconds_p50"] ?? "?") / \(report["answer_seconds_p95"] ?? "?") | \(report["errors"] ?? "?") \
                | \(report["answers_checked"] ?? "?") | \(report["lost_messages"] ?? "?") \
                | \(byReplica.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) |
                """)
            #expect(report["errors"] as? Int == 0, "\(report["error_samples"] ?? "")")
            #expect(report["lost_messages"] as? Int == 0, "\(report["lost_samples"] ?? "")")
            #expect((report["answers_checked"] as? Int ?? 0) > 0)
            #expect(Set(byReplica.keys) == ["replica-1", "replica-2"], "\(byReplica)")
        }
    }
}

@Suite struct ReplicaDocumentationTests {
    @Test("the README's nginx configuration is the one the replica tests run")
    func readmeShowsTheTestedConfiguration() throws {
        let readme = try String(contentsOf: TestFiles.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let shown = NginxTestServer.configuration(upstreams: ["10.0.0.11:11435", "10.0.0.12:11435"], listen: "80")
            .split(separator: "\n", omittingEmptySubsequences: false).map { "      " + $0 }.joined(separator: "\n")
        #expect(readme.contains(shown), "README.md should show, indented by six spaces:\n\(shown)")
    }
}
