import Foundation

/// Locates the test models (fetched by scripts/fetch-models) and the reference outputs in
/// ../shared/references, relative to the package root.
public enum TestFiles {
    /// The package root.
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// SmolLM2-135M-Instruct, Q4_1.
    public static let smolLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
    /// Gemma 3 270M, Q4_K_M.
    public static let gemma3 = "gemma-3-270m-q4_k_m.gguf"

    /// Errors that explain how to get missing test data.
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    /// The path of a model in models/, or an error naming scripts/fetch-models.
    public static func model(_ name: String) throws -> String {
        let path = packageRoot.appendingPathComponent("models").appendingPathComponent(name).path
        guard FileManager.default.fileExists(atPath: path) else {
            throw Missing(description: "Test model \(name) is missing: run scripts/fetch-models first.")
        }
        return path
    }

    /// The JSON reference file `name` (e.g. `smollm2.json`) from ../shared/references.
    public static func reference(_ name: String) throws -> Data {
        let candidates = [
            packageRoot.appendingPathComponent("../shared/references").appendingPathComponent(name),
            packageRoot.appendingPathComponent("shared/references").appendingPathComponent(name),
        ]
        for url in candidates where FileManager.default.fileExists(atPath: url.path) {
            return try Data(contentsOf: url)
        }
        throw Missing(description: "Reference file \(name) is missing: expected it in ../shared/references beside the package.")
    }
}
