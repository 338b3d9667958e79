import HearthCore
import Logging
import PostgresNIO

/// The tables of the chat database on PostgreSQL and the migrations that make them.
///
/// Numbered and named as the SQLite store's migrations are (`StoreSchema`), and kept the same
/// way: plain SQL, and a released migration is never edited; a change is a new one appended.
/// `schema_version` records which have run, one row each.
enum PostgresSchema {
    struct Migration: Sendable {
        var version: Int
        var name: String
        /// One statement each: the extended query protocol runs one at a time.
        var statements: [String]
    }

    /// What `schema_version`'s table comment says, so that a Hearth database can be told from
    /// another program's table of the same (common) name.
    static let mark = "Hearth chat store"

    /// The key of the advisory lock taken while migrating ("HRTH"), so that servers starting at
    /// once migrate one after the other rather than racing to create the same tables.
    static let migrationLock: Int64 = 0x4852_5448

    static let migrations: [Migration] = [
        Migration(version: 1, name: "v1 threads, messages and the thread counter", statements: [
            // Times are whole milliseconds (see `StoredDate`), from the database server's clock,
            // so that servers sharing the database agree on them. `activity` orders the thread
            // list: it grows with each change, unlike `updated_at`, which two changes in one
            // millisecond (or a clock set back) would tie or reverse.
            """
            CREATE TABLE thread (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                model TEXT,
                preset TEXT,
                system_prompt TEXT,
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                activity BIGINT NOT NULL
            )
            """,
            "CREATE INDEX thread_by_activity ON thread (activity)",
            // An identity column draws from a sequence, which never hands a value out twice,
            // even after the newest message is deleted (Regenerate) or every message is
            // (clearAll). Roles are checked in Swift, as in SQLite.
            """
            CREATE TABLE message (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                thread_id TEXT NOT NULL REFERENCES thread (id) ON DELETE CASCADE,
                role TEXT NOT NULL,
                content TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                completion_tokens BIGINT,
                tokens_per_second DOUBLE PRECISION
            )
            """,
            "CREATE INDEX message_by_thread ON message (thread_id, id)",
            // Sequences rather than max(...) + 1: two servers creating threads at the same moment
            // each get their own number, without waiting for each other.
            "CREATE SEQUENCE thread_number AS BIGINT MINVALUE 1 START 1",
            "CREATE SEQUENCE thread_activity AS BIGINT MINVALUE 1 START 1",
        ]),
        // The thoughts of a reasoning model's answer, kept beside the answer (NULL for others).
        Migration(version: 2, name: "v2 the thoughts before an answer", statements: [
            "ALTER TABLE message ADD COLUMN reasoning TEXT",
        ]),
    ]

    /// Brings the database's tables up to date, in one transaction, after checking that the
    /// database is Hearth's (or empty) and that no newer Hearth has migrated it further.
    static func migrate(_ connection: PostgresConnection, location: String, logger: Logger) async throws {
        try await checkEncoding(connection, location: location, logger: logger)
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            var applied = try await appliedVersions(connection, location: location, logger: logger)
            let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
            let unknown = applied.filter { known[$0.key] == nil }.sorted { $0.key < $1.key }.map(\.value)
            if !unknown.isEmpty {
                throw HearthError.chatStoreTooNew(path: location, unknownMigrations: unknown)
            }
            if applied.isEmpty {
                try await connection.query("""
                    CREATE TABLE schema_version (
                        version INTEGER PRIMARY KEY,
                        name TEXT NOT NULL,
                        applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                    )
                    """, logger: logger)
                try await connection.query("COMMENT ON TABLE schema_version IS \(unescaped: "'\(mark)'")", logger: logger)
                applied = [:]
            }
            for migration in migrations where applied[migration.version] == nil {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO schema_version (version, name) VALUES (\(migration.version), \(migration.name))", logger: logger)
            }
        }
    }

    /// The migrations recorded in `schema_version` (version → name): none for an empty
    /// database. Throws `chatStoreDamaged` for a database that has tables but is not Hearth's.
    private static func appliedVersions(_ connection: PostgresConnection, location: String,
                                        logger: Logger) async throws -> [Int: String] {
        // to_regclass follows search_path, as the unqualified names in every query do.
        let marks = try await connection.query(
            "SELECT obj_description(to_regclass('schema_version'), 'pg_class'), to_regclass('schema_version') IS NOT NULL",
            logger: logger).collect()
        let (comment, exists) = try marks.first?.decode((String?, Bool).self) ?? (nil, false)
        if !exists {
            // A database with tables but no schema_version was made by something else; migrating
            // it would mix Hearth's tables into it.
            let tables = try await connection.query("""
                SELECT table_name::text FROM information_schema.tables
                WHERE table_schema = current_schema() ORDER BY table_name
                """, logger: logger).collect().map { try $0.decode(String.self) }
            if !tables.isEmpty {
                throw HearthError.chatStoreDamaged(
                    path: location,
                    reason: "it is a PostgreSQL database, but not Hearth's (it has the tables \(tables.joined(separator: ", ")))")
            }
            return [:]
        }
        guard comment == mark else {
            throw HearthError.chatStoreDamaged(
                path: location, reason: "its schema_version table is another application's (it is not marked \"\(mark)\")")
        }
        let rows = try await connection.query("SELECT version, name FROM schema_version", logger: logger).collect()
        var applied: [Int: String] = [:]
        for row in rows {
            let (version, name) = try row.decode((Int, String).self)
            applied[version] = name
        }
        if applied.isEmpty {
            throw HearthError.chatStoreDamaged(path: location, reason: "its schema_version table is empty")
        }
        return applied
    }

    /// Text in any other encoding would fail to store an emoji, or store it as something else.
    private static func checkEncoding(_ connection: PostgresConnection, location: String, logger: Logger) async throws {
        let rows = try await connection.query("SELECT current_setting('server_encoding')", logger: logger).collect()
        let encoding = try rows.first?.decode(String.self) ?? "?"
        guard encoding == "UTF8" else {
            throw HearthError.chatStoreDamaged(
                path: location,
                reason: "its encoding is \(encoding), and Hearth stores UTF-8 text (create one with createdb --encoding=UTF8 --template=template0)")
        }
    }
}
