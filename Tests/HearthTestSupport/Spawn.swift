import Foundation

/// Starting programs with posix_spawn and learning of their end with waitpid.
///
/// Not Foundation's Process: on Linux it hands every child one end of a socket and learns the
/// child has exited only once every holder of that end has closed it. A process the child
/// leaves behind (the server `pg_ctl start` starts, the shell `setsid -f` detaches), or a
/// sibling started at the same moment that inherited the socket, keeps it open, and then the
/// child is never seen to exit nor reaped.
public enum Spawn {
    /// What a started program reads on its standard input.
    public enum Input {
        /// /dev/null.
        case nothing
        /// The file at this path.
        case file(String)
        /// This descriptor (the read end of a pipe), duplicated onto standard input.
        case descriptor(Int32)
    }

    /// Starts `argv` (its first element a path, or a name looked up in this process's PATH) in
    /// `environment` with only standard input, output and error open: output and error go to
    /// the files at `output` and `errors` (created, or emptied); every other descriptor of this
    /// process is closed in the child.
    /// It runs in `workingDirectory` when one is given, in a session of its own when
    /// `newSession` (so that a signal sent to this process's group does not reach it).
    public static func start(_ argv: [String], environment: [String: String], input: Input = .nothing,
                             output: String, errors: String, workingDirectory: String? = nil,
                             newSession: Bool = false) throws -> pid_t {
        guard !argv.isEmpty else { throw SpawnError.cannotStart("", "no program named") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch input {
        case .nothing: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .file(let path): posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
        case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Every descriptor above standard error: with glibc's closefrom action, also those
        // another thread opens meanwhile; without it, those open now.
        if let closeFrom = glibc.closeFrom {
            _ = closeFrom(&actions, 3)
        } else {
            let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            for descriptor in open.compactMap(Int32.init) where descriptor > 2 {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }
        var argv = argv
        if let workingDirectory {
            if let changeDirectory = glibc.changeDirectory {
                _ = changeDirectory(&actions, workingDirectory)
            } else {
                argv = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", workingDirectory] + argv
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with default signal dispositions and an empty mask, whatever this
        // process has blocked or ignored; glibc's POSIX_SPAWN_SETSID (0x80) is not imported.
        var defaults = sigset_t(), empty = sigset_t()
        sigfillset(&defaults)
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var flags = Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if newSession { flags |= 0x80 }
        posix_spawnattr_setflags(&attributes, flags)
        let arguments = argv.map { strdup($0) } + [nil]
        let variables = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            arguments.forEach { free($0) }
            variables.forEach { free($0) }
        }
        let executable = argv[0]
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, executable, &actions, &attributes, arguments, variables)
        guard result == 0 else { throw SpawnError.cannotStart(executable, String(cString: strerror(result))) }
        return pid
    }

    /// glibc's file actions that Swift does not import (glibc 2.29 and 2.34), looked up once.
    private static let glibc: (closeFrom: CloseFrom?, changeDirectory: ChangeDirectory?) = {
        let handle = dlopen(nil, RTLD_NOW)
        let closeFrom = dlsym(handle, "posix_spawn_file_actions_addclosefrom_np")
        let changeDirectory = dlsym(handle, "posix_spawn_file_actions_addchdir_np")
        return (closeFrom.map { unsafeBitCast($0, to: CloseFrom.self) }, changeDirectory.map { unsafeBitCast($0, to: ChangeDirectory.self) })
    }()

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    /// How a program ended.
    public enum Ending: Equatable, Sendable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// A signal (this number) ended it.
        case signaled(Int32)

        /// Reads a status word from waitpid (WIFEXITED, WEXITSTATUS and WTERMSIG are macros
        /// Swift does not import).
        init(status: Int32) {
            self = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
        }

        /// The exit status, or the signal's number, as Foundation's Process reports them.
        public var status: Int32 {
            switch self {
            case .exited(let status), .signaled(let status): status
            }
        }

        public var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signaled(let signal): "ended by signal \(signal)"
            }
        }
    }

    /// Reaps `pid` if it has ended (without waiting), returning how it ended; nil while it
    /// runs.
    public static func ended(_ pid: pid_t) -> Ending? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return Ending(status: status) }
            if result == 0 { return nil }
            if errno != EINTR { return .exited(-1) }
        }
    }
}

extension Spawn {
    /// Waits, blocking this thread, for `pid` to end and reaps it; past `limit`, kills it and
    /// throws `SpawnError.didNotEnd` with the end of the file at `errors`.
    public static func waitBlocking(_ pid: pid_t, atMost limit: Duration, name: String, errors: String? = nil) throws -> Ending {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let ending = ended(pid) { return ending }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let said = errors.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
        throw SpawnError.didNotEnd(name, limit, said)
    }
}

/// A program that could not be started, or did not end in time.
public enum SpawnError: Error, CustomStringConvertible {
    case cannotStart(String, String)
    case didNotEnd(String, Duration, String)

    public var description: String {
        switch self {
        case .cannotStart(let program, let reason): "Cannot start \(program): \(reason)"
        case .didNotEnd(let program, let limit, let errors):
            "\(program) did not end within \(limit.components.seconds) s and was killed; its standard error: \(errors.suffix(4000))"
        }
    }
}
