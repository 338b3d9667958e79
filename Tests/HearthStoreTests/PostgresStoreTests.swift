import Foundation
import HearthCore
import HearthStore
import HearthStorePostgres
import HearthTestSupport
import Testing

/// What only the PostgreSQL store has to get right: servers sharing one database, its schema
/// versions, and errors about reaching it. (Every ChatStore test also runs on it.)
@Suite("PostgreSQL store", .enabled(if: PostgresTestServer.isInstalled, Comment(rawValue: PostgresTestServer.unavailableReason ?? "")))
struct PostgresStoreTests {
    @Test("200 threads created at once through two stores (two replicas' pools) get Chat 1 to Chat 200, each once")
    func twoReplicasCreate() async throws {
        let database = try StoreDatabase(.postgres)
        let first = try await database.open()
        let second = try await database.open()
        defer { Task { await first.close(); await second.close() } }
        let threads = try await withThrowingTaskGroup(of: ChatThread.self) { group in
            for i in 0..<200 {
                let store = i % 2 == 0 ? first : second
                group.addTask { try await store.createThread() }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(threads.map(\.name)) == Set((1...200).map { "Chat \($0)" }))
        #expect(Set(threads.map(\.id)).count == 200)
        #expect(try await first.threads().count == 200)
        #expect(try await second.threads().map(\.id) == (try await first.threads()).map(\.id))
    }

    @Test("a message written through one store is read through the other, with the same id, time and thread order")
    func writeOneReadOther() async throws {
        let database = try StoreDatabase(.postgres)
        let writer = try await database.open()
        let reader = try await database.open()
        defer { Task { await writer.close(); await reader.close() } }
        let older = try await writer.createThread()
        let thread = try await writer.createThread(model: "smollm2", systemPrompt: "Be brief.")
        let question = try await writer.appendMessage(threadID: thread.id, role: "user", content: "Why?\u{0}")
        let answer = try await reader.appendMessage(threadID: thread.id, role: "assistant", content: "Because.",
                                                    completionTokens: 3, tokensPerSecond: 41.5, reasoning: "Think.")
        #expect(try await reader.messages(threadID: thread.id) == [question, answer])
        #expect(try await writer.messages(threadID: thread.id) == [question, answer])
        #expect(try await reader.thread(id: thread.id)?.updatedAt == answer.createdAt)
        _ = try await reader.appendMessage(threadID: older.id, role: "user", content: "Hello?")
        #expect(try await writer.threads().map(\.id) == [older.id, thread.id])
        #expect(try await writer.deleteLastAssistantMessage(threadID: thread.id) == answer)
        #expect(try await reader.messages(threadID: thread.id) == [question])
    }

    @Test("a new database gets Hearth's tables, its migrations recorded in schema_version, and keeps text readable")
    func newDatabase() async throws {
        let database = try StoreDatabase(.postgres)
        let store = try await database.open()
        defer { Task { await store.close() } }
        let thread = try await store.createThread()
        _ = try await store.appendMessage(threadID: thread.id, role: "user", content: "plain text")
        #expect(try database.value(sqlite: "", postgres: "SELECT string_agg(version || ' ' || name, '; ' ORDER BY version) FROM schema_version")
            == "1 v1 threads, messages and the thread counter; 2 v2 the thoughts before an answer")
        #expect(try database.value(sqlite: "", postgres: "SELECT obj_description('schema_version'::regclass, 'pg_class')") == "Hearth chat store")
        #expect(try database.value(sqlite: "", postgres: "SELECT content FROM message") == "plain text")
        // Opening again migrates nothing twice.
        _ = try await database.open()
        #expect(try database.count("schema_version") == 2)
    }

    @Test("stores opening a new database at the same moment migrate it once, one after the other")
    func concurrentMigrations() async throws {
        let database = try StoreDatabase(.postgres)
        let url = try #require(try database.url)
        let stores = try await withThrowingTaskGroup(of: PostgresChatStore.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresChatStore(url: url) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stores.count == 4)
        #expect(try database.count("schema_version") == 2)
        for store in stores { await store.close() }
    }

    @Test("a database a newer Hearth has migrated is refused with chatStoreTooNew, named without its password, and left alone")
    func newerSchema() async throws {
        let database = try StoreDatabase(.postgres)
        let url = try #require(try database.url)
        let thread = try await database.open().createThread()
        _ = try database.value(sqlite: "", postgres: """
            INSERT INTO schema_version (version, name) VALUES (3, 'v3 pinned threads');
            ALTER TABLE thread ADD COLUMN pinned BOOLEAN
            """)
        let error = await hearthError { _ = try await database.open() }
        #expect(error == .chatStoreTooNew(path: url.description, unknownMigrations: ["v3 pinned threads"]))
        #expect(error?.message.contains("newer version of Hearth") == true)
        #expect(error?.message.contains("HEARTH_DATABASE_URL") == true)
        #expect(error?.message.contains(url.password ?? "?") == false)
        #expect(error?.category == .resource)
        #expect(try database.value(sqlite: "", postgres: "SELECT id FROM thread") == thread.id)
        #expect(try database.count("schema_version") == 3)
    }

    @Test("another application's database is refused and gets no Hearth tables")
    func foreignDatabase() async throws {
        let database = try StoreDatabase(.postgres)
        _ = try database.value(sqlite: "", postgres: "CREATE TABLE notes (id SERIAL PRIMARY KEY, body TEXT)")
        guard case .chatStoreDamaged(_, let reason) = await hearthError({ _ = try await database.open() }) else {
            Issue.record("expected chatStoreDamaged for a database with other tables")
            return
        }
        #expect(reason.contains("not Hearth's") && reason.contains("notes"))
        #expect(try database.value(sqlite: "", postgres: "SELECT string_agg(table_name, ',') FROM information_schema.tables WHERE table_schema = 'public'") == "notes")

        // A schema_version table of its own (a common name) is not taken for Hearth's.
        let other = try StoreDatabase(.postgres)
        _ = try other.value(sqlite: "", postgres: "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        guard case .chatStoreDamaged(_, let otherReason) = await hearthError({ _ = try await other.open() }) else {
            Issue.record("expected chatStoreDamaged for another application's schema_version")
            return
        }
        #expect(otherReason.contains("another application"))
    }

    @Test("a database in another encoding than UTF-8 is refused with how to make one")
    func latin1Database() async throws {
        let server = try PostgresTestServer.shared
        let name = "latin1_\(UInt32.random(in: .min ... .max))"
        try server.psql("CREATE DATABASE \(name) ENCODING 'LATIN1' TEMPLATE template0", database: "postgres")
        let error = await hearthError { _ = try await PostgresChatStore(url: try PostgresURL(server.url(database: name))) }
        guard case .chatStoreDamaged(_, let reason) = error else {
            Issue.record("expected chatStoreDamaged, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("LATIN1") && reason.contains("UTF8"))
    }

    @Test("nothing listening, a wrong password, a missing database, TLS the server lacks: errors that name the server and never the password")
    func connectionErrors() async throws {
        let server = try PostgresTestServer.shared
        let database = try server.createDatabase()
        let secret = "s3cret-\(UInt32.random(in: .min ... .max))"
        func failure(_ url: String) async -> (HearthError?, String) {
            let error = await hearthError { _ = try await PostgresChatStore(url: try PostgresURL(url)) }
            let message = error?.message ?? ""
            #expect(!message.contains(secret), "the password is in: \(message)")
            #expect(!message.contains(server.password), "the password is in: \(message)")
            return (error, message)
        }

        // Port 1 on loopback: nothing listens there.
        let (refused, refusedMessage) = await failure("postgres://hearth:\(secret)@127.0.0.1:1/hearth")
        guard case .chatDatabaseUnreachable(let location, let reason) = refused else {
            Issue.record("expected chatDatabaseUnreachable, got \(String(describing: refused))")
            return
        }
        #expect(location == "postgres://hearth:***@127.0.0.1:1/hearth")
        #expect(reason.contains("127.0.0.1:1") && reason.contains("refused"))
        #expect(refusedMessage.contains("HEARTH_DATABASE_URL") && refusedMessage.contains("--database"))
        #expect(refused?.category == .network && refused?.isRetryable == true)

        let (_, wrongPassword) = await failure("postgres://hearth:\(secret)@127.0.0.1:\(server.port)/\(database)")
        #expect(wrongPassword.contains("password") && wrongPassword.contains("hearth"))

        let (_, noPassword) = await failure("postgres://hearth@127.0.0.1:\(server.port)/\(database)")
        #expect(noPassword.contains("PGPASSWORD"))

        let (_, missing) = await failure(server.url(database: "no_such_database"))
        #expect(missing.contains("no database no_such_database") && missing.contains("createdb"))

        if server.certificate == nil {
            // Without a certificate (no openssl to make one) the server offers no TLS.
            let (_, noTLS) = await failure(server.url(database: database, parameters: "?sslmode=require"))
            #expect(noTLS.contains("TLS") && noTLS.contains("sslmode"))
            // prefer (libpq's default) falls back to an unencrypted connection, as libpq does.
            let preferred = try await PostgresChatStore(url: PostgresURL(server.url(database: database, parameters: "?sslmode=prefer")))
            #expect(try await preferred.createThread().name == "Chat 1")
            await preferred.close()
        } else {
            // A certificate signed by no authority the system trusts.
            let (_, untrusted) = await failure(server.url(database: database, parameters: "?sslmode=verify-full"))
            #expect(untrusted.contains("TLS") && untrusted.contains("sslrootcert"), "\(untrusted)")
        }
    }

    @Test("sslmode: require and prefer encrypt, disable does not, verify-full checks the certificate against sslrootcert",
          .enabled(if: (try? PostgresTestServer.shared.certificate) != nil, "the test server has TLS when openssl is installed"))
    func tls() async throws {
        let server = try PostgresTestServer.shared
        let certificate = try #require(server.certificate)
        for (parameters, encrypted) in [("?sslmode=require", true), ("", true), ("?sslmode=disable", false),
                                        ("?sslmode=verify-full&sslrootcert=\(certificate)", true),
                                        ("?sslmode=verify-ca&sslrootcert=\(certificate)", true)] {
            let database = try server.createDatabase()
            let store = try await PostgresChatStore(url: PostgresURL(server.url(database: database, parameters: parameters)))
            _ = try await store.createThread()
            // The pool's connection stays open, idle: the server says whether it is encrypted.
            let ssl = try server.psql("""
                SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
                WHERE a.datname = '\(database)' AND a.application_name = 'hearth'
                """, database: "postgres").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(ssl == (encrypted ? "t" : "f"), "\(parameters)")
            await store.close()
        }
    }

    @Test("connections the server drops (a restart, an administrator) are replaced: the store goes on working")
    func droppedConnections() async throws {
        let database = try StoreDatabase(.postgres)
        let store = try await database.open()
        defer { Task { await store.close() } }
        let thread = try await store.createThread()
        // Several connections in the pool, then all of them cut from the server's side.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<8 { group.addTask { _ = try await store.appendMessage(threadID: thread.id, role: "user", content: "\(i)") } }
            try await group.waitForAll()
        }
        let name = try #require(try database.url?.database)
        let cut = try database.value(sqlite: "", postgres: """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = '\(name)' AND pid <> pg_backend_pid()
            """)
        #expect((Int(cut) ?? 0) >= 1)
        // The pool learns of each cut when its connection closes; give it that moment.
        try await Task.sleep(for: .seconds(1))
        #expect(try await store.messages(threadID: thread.id).count == 8)
        _ = try await store.appendMessage(threadID: thread.id, role: "assistant", content: "still here")
        #expect(try await store.messages(threadID: thread.id).last?.content == "still here")
    }

    @Test("a closed store refuses further calls with a HearthError; closing twice is harmless")
    func closed() async throws {
        let database = try StoreDatabase(.postgres)
        let store = try await database.open()
        let thread = try await store.createThread()
        await store.close()
        await store.close()
        guard case .chatStoreFailed(_, let reason) = await hearthError({ _ = try await store.thread(id: thread.id) }) else {
            Issue.record("expected chatStoreFailed after close")
            return
        }
        #expect(reason.contains("closed"))
    }
}

@Suite("Database URLs")
struct DatabaseURLTests {
    @Test("a path is a SQLite file; postgres:// and postgresql:// URLs are PostgreSQL, read as libpq reads them")
    func parsing() throws {
        #expect(try ChatDatabase("/srv/hearth/chats.sqlite") == .sqlite(path: "/srv/hearth/chats.sqlite"))
        #expect(try ChatDatabase("relative/chats.sqlite") == .sqlite(path: "relative/chats.sqlite"))
        let full = try PostgresURL("postgres://alice:p%40ss%2Fword@db.internal:5433/chats?sslmode=require", environment: [:])
        #expect(full == PostgresURL(user: "alice", password: "p@ss/word", host: "db.internal", port: 5433, database: "chats",
                                    tls: .require))
        #expect(full.description == "postgres://alice:***@db.internal:5433/chats?sslmode=require")
        #expect(full.server == "db.internal:5433")
        let defaults = try PostgresURL("postgresql://bob@10.0.0.5", environment: [:])
        #expect(defaults == PostgresURL(user: "bob", host: "10.0.0.5", port: 5432, database: "bob", tls: .prefer))
        let ipv6 = try PostgresURL("postgres://carol@[::1]:6000/x?sslmode=verify-full&sslrootcert=/etc/ca.pem", environment: [:])
        #expect(ipv6.host == "::1" && ipv6.server == "[::1]:6000" && ipv6.tls == .verifyFull && ipv6.rootCertificatePath == "/etc/ca.pem")
        // PGPASSWORD stands in for a password the URL leaves out, as in libpq.
        #expect(try PostgresURL("postgres://dan@h/db", environment: ["PGPASSWORD": "pw"]).password == "pw")
        #expect(try PostgresURL("postgres://dan:given@h/db", environment: ["PGPASSWORD": "pw"]).password == "given")
        #expect(try ChatDatabase("postgres://dan:pw@h/db", environment: [:]).description == "postgres://dan:***@h:5432/db")
    }

    @Test("a malformed URL is refused naming where it came from and never showing the password", arguments: [
        ("postgres://u:topsecret@h:notaport/db", "valid URL"),
        ("postgres://u:topsecret@/db", "no host"),
        ("postgres://u:topsecret@h/db?sslmode=sometimes", "sslmode"),
        ("postgres://u:topsecret@h/db?pool=9", "pool"),
        ("postgres://u:topsecret@h/a/b", "more than one part"),
        ("mysql://u:topsecret@h/db", "mysql"),
        ("postgres://u:top@secret@h:x/db", "valid URL"),
    ])
    func malformed(text: String, mentions: String) async {
        let error = await hearthError { _ = try ChatDatabase(text, source: "HEARTH_DATABASE_URL", environment: [:]) }
        let message = invalidArgumentText(error) ?? ""
        #expect(message.contains(mentions), "\(message)")
        #expect(message.contains("HEARTH_DATABASE_URL"))
        #expect(!message.contains("topsecret") && !message.contains("secret@"), "\(message)")
    }

    @Test("--database wins over HEARTH_DATABASE_URL, which wins over the default SQLite file; empty means unset")
    func precedence() throws {
        let environment = ["HEARTH_DATABASE_URL": "postgres://u@h/env", "HEARTH_DATA_DIR": "/data"]
        #expect(try ChatDatabase.chosen(option: "/tmp/x.sqlite", environment: environment) == .sqlite(path: "/tmp/x.sqlite"))
        #expect(try ChatDatabase.chosen(option: nil, environment: environment) == .postgres(try PostgresURL("postgres://u@h/env")))
        #expect(try ChatDatabase.chosen(option: "", environment: ["HEARTH_DATABASE_URL": "", "HEARTH_DATA_DIR": "/data"])
            == .sqlite(path: "/data/hearth.sqlite"))
        #expect(try ChatDatabase.chosen(option: nil, environment: ["HEARTH_DATABASE_URL": "/srv/chats.sqlite"])
            == .sqlite(path: "/srv/chats.sqlite"))
    }
}
