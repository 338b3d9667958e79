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
    /// Whether the pages are the file's (read again from disk when dropped) rather than a copy.
    private var backedByFile = false

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
        backedByFile = true
    }

    /// Copies `bytes` into a private anonymous mapping, so that a file built in memory (by
    /// `GGUFWriter`, in tests) is read exactly as one from disk. `path` names it in errors.
    public init(bytes: [UInt8], path: String = "<memory>") throws {
        self.path = path
        let size = bytes.count
        self.size = size
        if size == 0 {
            base = nil
            return
        }
        #if canImport(Darwin)
        let flags = MAP_PRIVATE | MAP_ANON
        #else
        let flags = MAP_PRIVATE | MAP_ANONYMOUS
        #endif
        let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, flags, -1, 0)
        guard let mapped, mapped != MAP_FAILED else {
            throw HearthError.resourceUnavailable("Cannot map \(size) bytes for \(path): \(String(cString: strerror(errno)))")
        }
        bytes.withUnsafeBytes { mapped.copyMemory(from: $0.baseAddress!, byteCount: size) }
        // Read-only like a file mapping, so a stray write through a tensor view faults here too.
        mprotect(mapped, size, PROT_READ)
        base = UnsafeRawPointer(mapped)
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), size) }
    }

    /// Lets the system take back the resident pages wholly inside `range` (bytes of this
    /// mapping) once they have been copied elsewhere: a file's pages are read from disk again if
    /// touched later, so the bytes stay the same; a copy made in memory keeps its pages.
    public func dropPages(_ range: UnsafeRawBufferPointer) {
        guard backedByFile, let start = range.baseAddress, range.count > 0 else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let first = (Int(bitPattern: start) + page - 1) / page * page
        let end = (Int(bitPattern: start) + range.count) / page * page
        guard end > first, let pointer = UnsafeMutableRawPointer(bitPattern: first) else { return }
        _ = madvise(pointer, end - first, Int32(MADV_DONTNEED))
    }

    /// The whole file as bytes.
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base, count: size)
    }
}
