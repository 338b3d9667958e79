import Foundation
import HearthCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a lock file, shared with other processes: the same locks
/// huggingface_hub's `filelock` takes, so Hearth and Python never write the same blob at once.
/// The kernel drops the lock when the process dies, so a killed pull never leaves it held.
final class FileLock: @unchecked Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    private static func openFile(_ url: URL) throws -> Int32 {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HearthError.resourceUnavailable("Cannot open the lock file \(url.path) (errno \(errno))") }
        return fd
    }

    /// Waits for the lock, polling so that the wait can be cancelled; `onWait` runs once if the
    /// lock is held by someone else.
    static func acquire(_ url: URL, onWait: () -> Void = {}) async throws -> FileLock {
        let fd = try openFile(url)
        var waited = false
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                close(fd)
                throw HearthError.resourceUnavailable("Cannot lock \(url.path) (errno \(errno))")
            }
            if !waited {
                waited = true
                onWait()
            }
            do {
                try await Task.sleep(for: .milliseconds(50))
            } catch {
                close(fd)
                throw error
            }
        }
        return FileLock(descriptor: fd)
    }

    /// Takes the lock, blocking the thread: only for locks that are held for moments.
    static func acquireBlocking(_ url: URL) throws -> FileLock {
        let fd = try openFile(url)
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                close(fd)
                throw HearthError.resourceUnavailable("Cannot lock \(url.path) (errno \(errno))")
            }
        }
        return FileLock(descriptor: fd)
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// Free bytes for an unprivileged user on the file system holding `url` (or its nearest
/// existing parent); nil when it cannot be asked.
func availableDiskSpace(at url: URL) -> Int? {
    var path = url
    while !FileManager.default.fileExists(atPath: path.path), path.pathComponents.count > 1 {
        path = path.deletingLastPathComponent()
    }
    var stats = statvfs()
    guard statvfs(path.path, &stats) == 0 else { return nil }
    return Int(stats.f_bavail) * Int(stats.f_frsize)
}
