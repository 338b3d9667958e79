import Foundation

/// The machine's python3, for tests that run real Python clients and reference tools.
public enum Python {
    /// Whether python3 can import every module in `modules` (such as "openai, ollama").
    public static func canImport(_ modules: String) -> Bool {
        (try? Child.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import \(modules)"]))?.status == 0
    }
}
