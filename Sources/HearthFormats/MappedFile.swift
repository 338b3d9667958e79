#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file mapped read-only into memory. The mapping lives as long as this object.
///
/// Pages are read from disk when first touched, so mapping a large model is cheap and its
/// resident size grows only with what is used.
public final class MappedFile: @unchecked Sendable {
    /// Start of the mapping; nil for an empty file.
    public let base: UnsafeRawPointer?
    /// Size of the file in bytes.
    public let size: Int
    /// The path the file was opened from.
    public let path: String

    /// Maps the file at `path`.
    public init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw HearthError.fileNotFound(path: path) }
            throw HearthError.resourceUnavailable("Cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw HearthError.resourceUnavailable("Cannot read the size of \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw HearthError.invalidModelFile(path: path, reason: "it is not a regular file")
        }
        size = Int(info.st_size)
        if size == 0 {
            base = nil
            return
        }
        let mapped = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
        guard let mapped, mapped != MAP_FAILED else {
            throw HearthError.resourceUnavailable("Cannot memory-map \(path): \(String(cString: strerror(errno)))")
        }
        base = UnsafeRawPointer(mapped)
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), size) }
    }

    /// The whole file as bytes.
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base, count: size)
    }
}
