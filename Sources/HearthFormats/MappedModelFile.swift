import Foundation
import HearthCore

/// A file format read from one mapping of the file: opening it by URL, by path or from bytes
/// in memory is the same for every format.
public protocol MappedModelFile {
    /// Reads the file's header from an existing mapping.
    init(mapping: MappedFile) throws
}

extension MappedModelFile {
    /// Opens and maps the file at `url`.
    public init(contentsOf url: URL) throws {
        try self.init(path: url.path)
    }

    /// Opens and maps the file at `path`.
    public init(path: String) throws {
        try self.init(mapping: MappedFile(path: path))
    }

    /// Reads a file held in memory; `path` names it in errors.
    public init(bytes: [UInt8], path: String = "<memory>") throws {
        try self.init(mapping: MappedFile(bytes: bytes, path: path))
    }
}
