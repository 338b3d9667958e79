import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL server of the test process's own: `initdb` into a temporary directory, started
/// with `pg_ctl` on a free loopback port (its socket in that directory too), a database per
/// test, and stopped and deleted when the process exits.
///
/// One server serves the whole process (`shared`, started on first use). It is stopped by an
/// `atexit` handler and, should the process die without running it (a crash, SIGKILL), by a
/// watchdog shell that waits for the process to go; so no server outlives its tests.
///
/// PostgreSQL refuses to run as root: as root (as CI runs), the server runs as the `postgres`
/// user that Debian's package creates, else as `nobody`. Logins over TCP need the password
/// (SCRAM), so the store's URL handling is tested with a real one.
public final class PostgresTestServer: Sendable {
    /// The superuser the tests log in as.
    public static let user = "hearth"
    /// The server's port on 127.0.0.1.
    public let port: Int
    /// The superuser's password.
    public let password: String
    /// The temporary directory: `data/`, the socket, `server.log`.
    public let directory: URL
    /// The server's self-signed certificate for 127.0.0.1 (PEM), when openssl was there to make
    /// one: the server then offers TLS. nil: it offers none.
    public let certificate: String?
    private let binaries: URL
    private let runAs: String?

    /// Why PostgreSQL tests cannot run here, or nil when they can: a message for skipped tests.
    public static let unavailableReason: String? = {
        guard binDirectory() != nil else {
            return "PostgreSQL is not installed (no initdb, pg_ctl, postgres and psql in PATH or /usr/lib/postgresql/*/bin): apt-get install postgresql to run the PostgreSQL tests."
        }
        return nil
    }()

    /// Whether PostgreSQL is installed, so that its tests run.
    public static var isInstalled: Bool { unavailableReason == nil }

    /// The process's server, started on first use. Throws when PostgreSQL is not installed or
    /// the server cannot start (the error quotes its log).
    public static var shared: PostgresTestServer {
        get throws { try sharedResult.get() }
    }

    private static let sharedResult = Result<PostgresTestServer, any Error> {
        let server = try PostgresTestServer()
        sharedServer.withLock { $0 = server }
        atexit { PostgresTestServer.stopSharedAtExit() }
        return server
    }

    private static let sharedServer = Mutex<PostgresTestServer?>(nil)

    private init() throws {
        guard let binaries = Self.binDirectory() else {
            throw TestFiles.Missing(description: Self.unavailableReason ?? "PostgreSQL is not installed")
        }
        self.binaries = binaries
        let runAs = geteuid() == 0 ? (getpwnam("postgres") != nil ? "postgres" : "nobody") : nil
        self.runAs = runAs
        let password = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()
        self.password = password
        // Short: the socket's path (directory + "/.s.PGSQL.NNNNN") must fit in 107 bytes.
        let directory = URL(fileURLWithPath: "/tmp/hearth-pg-\(UUID().uuidString.prefix(8).lowercased())")
        self.directory = directory
        let dataDirectory = directory.appendingPathComponent("data").path
        func run(_ tool: String, _ arguments: [String]) throws {
            try Self.run(binaries.appendingPathComponent(tool).path, arguments, runAs: runAs, scratch: directory)
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        Self.startWatchdog(directory: directory, pgctl: binaries.appendingPathComponent("pg_ctl").path, runAs: runAs)
        do {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("data"), withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
            let passwordFile = directory.appendingPathComponent("password")
            try Data(password.utf8).write(to: passwordFile)
            if let runAs, let account = getpwnam(runAs) {
                for path in [directory.path, directory.appendingPathComponent("data").path, passwordFile.path] {
                    guard chown(path, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                        throw TestFiles.Missing(description: "Cannot give \(path) to the user \(runAs): \(String(cString: strerror(errno)))")
                    }
                }
            }
            try run("initdb", [
                "-D", dataDirectory, "-U", Self.user, "--pwfile=\(passwordFile.path)", "--auth-local=trust",
                "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync",
            ])
            // A certificate for 127.0.0.1 signed by itself, so that it is also the authority
            // verify-full checks it against (sslrootcert).
            var certificate: String?
            var tlsSettings = ""
            if let openssl = ["/usr/bin/openssl", "/bin/openssl"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
                let crt = directory.appendingPathComponent("server.crt").path
                let key = directory.appendingPathComponent("server.key").path
                try Self.run(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt, "-days", "2",
                                       "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                             runAs: runAs, scratch: directory)
                // PostgreSQL refuses a key that others can read.
                chmod(key, 0o600)
                certificate = crt
                tlsSettings = " -c ssl=on -c ssl_cert_file=\(crt) -c ssl_key_file=\(key)"
            }
            self.certificate = certificate
            var started: Int?
            var lastError: (any Error)?
            // A port found free can be taken before the server binds it: try another.
            for _ in 0..<5 {
                let port = try freeLoopbackPort()
                do {
                    try run("pg_ctl", [
                        "-D", dataDirectory, "-l", directory.appendingPathComponent("server.log").path, "-w", "-t", "120",
                        // No durability needed for test data; connections for many tests at once.
                        "-o", "-p \(port) -c listen_addresses=127.0.0.1 -c unix_socket_directories=\(directory.path) -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=500" + tlsSettings,
                        "start",
                    ])
                    started = port
                    break
                } catch {
                    lastError = error
                }
            }
            guard let started else { throw lastError ?? TestFiles.Missing(description: "PostgreSQL did not start") }
            port = started
        } catch {
            let log = (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: directory)
            throw TestFiles.Missing(description: "The test PostgreSQL server did not start: \(error)\n\(log.suffix(2000))")
        }
    }

    private var dataDirectory: String { directory.appendingPathComponent("data").path }

    // MARK: Databases

    /// A new, empty database (UTF-8, owned by `user`) and its name.
    public func createDatabase() throws -> String {
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        try psql("CREATE DATABASE \(name)", database: "postgres")
        return name
    }

    /// The URL of `database`, with the password unless `withPassword` is false (then the
    /// password has to come from PGPASSWORD).
    public func url(database: String, withPassword: Bool = true, parameters: String = "") -> String {
        "postgres://\(Self.user)\(withPassword ? ":" + password : "")@127.0.0.1:\(port)/\(database)\(parameters)"
    }

    /// Runs `sql` in `database` with psql and returns what it prints: one line per row, columns
    /// separated by "|".
    @discardableResult
    public func psql(_ sql: String, database: String) throws -> String {
        let psql = binaries.appendingPathComponent("psql")
        let executable = FileManager.default.isExecutableFile(atPath: psql.path) ? psql.path : "/usr/bin/psql"
        return try run(executable, ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port),
                                    "-U", Self.user, "-d", database, "-c", sql],
                       environment: ["PGPASSWORD": password, "PGCONNECT_TIMEOUT": "10"], asServerUser: false)
    }

    // MARK: Stopping

    /// Stops the server at once (`pg_ctl stop -m immediate`) and deletes its directory.
    public func stop() {
        _ = try? run(binaries.appendingPathComponent("pg_ctl").path, ["-D", dataDirectory, "-m", "immediate", "-w", "stop"],
                     asServerUser: true)
        try? FileManager.default.removeItem(at: directory)
    }

    /// At exit, when Foundation's Process may no longer be safe to start: SIGQUIT to the
    /// postmaster is what `pg_ctl stop -m immediate` sends. Then the directory goes.
    private static func stopSharedAtExit() {
        guard let server = sharedServer.withLock({ $0 }) else { return }
        let pidFile = server.directory.appendingPathComponent("data/postmaster.pid")
        if let text = try? String(contentsOf: pidFile, encoding: .utf8),
           let pid = text.split(separator: "\n").first.flatMap({ pid_t($0.trimmingCharacters(in: .whitespaces)) }), pid > 0 {
            kill(pid, SIGQUIT)
            for _ in 0..<500 where kill(pid, 0) == 0 { usleep(10_000) }
        }
        try? FileManager.default.removeItem(at: server.directory)
    }

    /// A shell that outlives this process by a few seconds: once the process is gone without
    /// having deleted the directory (a crash, SIGKILL, even during initdb or pg_ctl start), it
    /// stops the server (again, for a while, in case a pg_ctl start was still under way) and
    /// deletes the directory. It has a session of its own, so a Ctrl-C that kills the tests
    /// does not kill it too.
    private static func startWatchdog(directory: URL, pgctl: String, runAs: String?) {
        let data = directory.appendingPathComponent("data").path
        let stop = (runAs.map { "\(Self.runuser) -u \($0) -- " } ?? "") + "\(pgctl) -D \(data) -m immediate stop"
        let script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            for attempt in 1 2 3 4 5 6 7 8 9 10; do
                [ -d \(directory.path) ] || exit 0
                [ -f \(data)/postmaster.pid ] && \(stop)
                sleep 1
            done
            rm -rf \(directory.path)
            """
        _ = try? spawn(["/bin/sh", "-c", script], environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"],
                       output: "/dev/null", errors: "/dev/null", newSession: true)
    }

    // MARK: Processes

    private static let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "runuser"

    /// Runs a program to its end and returns its standard output; throws with its standard
    /// error when it fails. `asServerUser` runs it as the server's user when that is not us.
    @discardableResult
    private func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                     asServerUser: Bool) throws -> String {
        try Self.run(executable, arguments, environment: environment, runAs: asServerUser ? runAs : nil, scratch: directory)
    }

    /// Runs a program as `runAs` (nil: as this process's user), its output in files in
    /// `scratch`.
    @discardableResult
    private static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                            runAs: String?, scratch directory: URL) throws -> String {
        let argv = runAs.map { [Self.runuser, "-u", $0, "--", executable] } ?? [executable]
        let output = directory.appendingPathComponent("run-\(UUID().uuidString).out")
        let errors = directory.appendingPathComponent("run-\(UUID().uuidString).err")
        defer {
            try? FileManager.default.removeItem(at: output)
            try? FileManager.default.removeItem(at: errors)
        }
        let pid = try spawn(argv + arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
                            output: output.path, errors: errors.path)
        let ending = try Spawn.waitBlocking(pid, atMost: .seconds(600), name: (executable as NSString).lastPathComponent, errors: errors.path)
        let printed = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard ending == .exited(0) else {
            let said = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw TestFiles.Missing(description: "\((executable as NSString).lastPathComponent) \(arguments.prefix(3).joined(separator: " ")) … failed (\(ending)): \(said)\(printed)")
        }
        return printed
    }

    /// Starts `argv` from / (which the server's user can enter; it may not enter the working
    /// directory), its output and error in files, in a session of its own when `newSession`.
    private static func spawn(_ argv: [String], environment: [String: String], output: String, errors: String,
                              newSession: Bool = false) throws -> pid_t {
        try Spawn.start(argv, environment: environment, output: output, errors: errors, workingDirectory: "/", newSession: newSession)
    }

    /// The directory holding initdb, pg_ctl and postgres: the newest /usr/lib/postgresql/N/bin
    /// (Debian's layout), else where PATH finds initdb.
    private static func binDirectory() -> URL? {
        let tools = ["initdb", "pg_ctl", "postgres"]
        func complete(_ directory: URL) -> Bool {
            tools.allSatisfy { FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent($0).path) }
        }
        let debian = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: debian.path)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        var candidates = versions.map { debian.appendingPathComponent("\($0)/bin") }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let initdb = URL(fileURLWithPath: String(directory)).appendingPathComponent("initdb")
            // A symbolic link (/usr/local/bin/initdb) stands for the directory it points into.
            candidates.append(initdb.resolvingSymlinksInPath().deletingLastPathComponent())
        }
        guard let found = candidates.first(where: complete) else { return nil }
        let psql = FileManager.default.isExecutableFile(atPath: found.appendingPathComponent("psql").path)
            || FileManager.default.isExecutableFile(atPath: "/usr/bin/psql")
        return psql ? found : nil
    }
}
