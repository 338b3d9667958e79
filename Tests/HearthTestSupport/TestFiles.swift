import Foundation

/// Locates the test models (fetched by scripts/fetch-models) and the reference outputs in
/// Tests/Fixtures/references (written by scripts/make-reference-fixtures.py), relative to the
/// package root.
public enum TestFiles {
    /// The package root.
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// SmolLM2-135M-Instruct, Q4_1.
    public static let smolLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
    /// Gemma 3 270M, Q4_K_M.
    public static let gemma3 = "gemma-3-270m-q4_k_m.gguf"
    /// The folder of llama.cpp's tokenizer test vocabularies (`ggml-vocab-*.gguf` with their
    /// `.gguf.inp` / `.gguf.out` pairs).
    public static let llamaCppVocabularies = "llama-cpp-vocab"

    /// Errors that explain how to get missing test data.
    public struct Missing: Error, CustomStringConvertible {
        public let description: String

        /// An error saying what is missing and how to get it.
        public init(description: String) { self.description = description }
    }

    /// The path of a model in models/, or an error naming scripts/fetch-models.
    public static func model(_ name: String) throws -> String {
        let path = packageRoot.appendingPathComponent("models").appendingPathComponent(name).path
        guard FileManager.default.fileExists(atPath: path) else {
            throw Missing(description: "Test model \(name) is missing: run scripts/fetch-models first.")
        }
        return path
    }

    /// The JSON reference file `name` (e.g. `smollm2.json`) from Tests/Fixtures/references.
    public static func reference(_ name: String) throws -> Data {
        let url = packageRoot.appendingPathComponent("Tests/Fixtures/references").appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw Missing(description: "Reference file \(name) is missing from Tests/Fixtures/references: "
                + "scripts/make-reference-fixtures.py writes it.")
        }
        return try Data(contentsOf: url)
    }
}

extension TestFiles {
    /// The URL of a model in models/, or an error naming scripts/fetch-models.
    public static func modelURL(_ name: String) throws -> URL {
        URL(fileURLWithPath: try model(name))
    }
}

/// A small deterministic generator (Steele, Lea and Flood's SplitMix64), so that random tests
/// fail the same way on every run.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The path of this test process's own folder under the system temporary directory.
private let processFolderPath = FileManager.default.temporaryDirectory
    .appendingPathComponent("hearth-test-process-\(getpid())").path

/// Made once, with its removal when the process exits.
private let processFolder: URL = {
    atexit { try? FileManager.default.removeItem(atPath: processFolderPath) }
    return URL(fileURLWithPath: processFolderPath)
}()

extension TemporaryDirectory {
    /// A folder `name` that lives as long as the test process: for files written once and
    /// shared by many tests (the tiny models). Removed when the process exits.
    public static func shared(_ name: String) throws -> URL {
        let url = processFolder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// A directory under the system temporary directory, removed when the test is done with it.
public final class TemporaryDirectory {
    /// The directory.
    public let url: URL

    /// Creates an empty directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

extension TestFiles {
    /// The `hearth` executable, which SwiftPM builds into the same directory as the tests.
    public static var hearthBinary: URL {
        get throws { try executable("hearth") }
    }

    /// An executable of this package (`hearth`, `store-writer`…), which SwiftPM builds into the
    /// same directory as the tests.
    public static func executable(_ name: String) throws -> URL {
        let directory = Bundle.main.bundleURL.deletingLastPathComponent()
        for candidate in [directory, Bundle.main.bundleURL] {
            let url = candidate.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw Missing(description: "The \(name) executable was not built next to the tests (\(directory.path)); run swift build first.")
    }
}
