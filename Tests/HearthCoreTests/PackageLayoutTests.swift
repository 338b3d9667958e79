import Foundation
import HearthTestSupport
import Testing

/// The package's shape as the README's Layout gives it, checked on the sources themselves.
@Suite struct PackageLayoutTests {
    /// Each module's layer, from the bottom: a module imports only modules of lower layers.
    static let layers: [[String]] = [
        ["HearthCore", "CHearthKernels", "CZlib"],
        ["HearthFormats"],
        ["HearthKernels", "HearthTokenizers", "HearthTemplates"],
        ["HearthConstraints"],
        ["HearthEngine"],
        ["HearthSpeech", "HearthHub", "HearthStore"],
        ["HearthStorePostgres"],
        ["Hearth"],
        ["HearthServer"],
        ["HearthCLI"],
    ]

    static var layerOfModule: [String: Int] {
        var result: [String: Int] = [:]
        for (layer, modules) in layers.enumerated() {
            for module in modules { result[module] = layer }
        }
        return result
    }

    /// The Swift files under a folder of the package, with their paths relative to the root.
    static func swiftFiles(under folder: String) throws -> [(path: String, text: String)] {
        try files(under: folder).filter { $0.path.hasSuffix(".swift") }
    }

    static func files(under folder: String) throws -> [(path: String, text: String)] {
        let root = TestFiles.packageRoot.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else {
            return []
        }
        var result: [(path: String, text: String)] = []
        for case let url as URL in walker where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            // Binary fixtures (models, audio) are not text and name no path.
            guard let text = try? String(contentsOf: url, encoding: .utf8) else { continue }
            result.append((String(url.path.dropFirst(TestFiles.packageRoot.path.count + 1)), text))
        }
        return result
    }

    /// The modules a Swift file imports (`import X`, `@testable import X`, `package import X`, …).
    static func imports(of text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ").filter { !$0.hasPrefix("@") && !["public", "package", "internal"].contains($0) }
            guard words.count >= 2, words[0] == "import" else { return nil }
            return String(words[1].split(separator: ".")[0])
        }
    }

    @Test func sourceFoldersAreTheLayersModules() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: TestFiles.packageRoot.appendingPathComponent("Sources").path)
        #expect(Set(folders) == Set(Self.layerOfModule.keys), "every module has a layer, every layer's module a folder")
    }

    @Test func importsPointDown() throws {
        let layerOf = Self.layerOfModule
        var checked = 0
        for module in layerOf.keys.sorted() {
            for file in try Self.swiftFiles(under: "Sources/\(module)") {
                for imported in Self.imports(of: file.text) {
                    guard let importedLayer = layerOf[imported] else { continue }
                    checked += 1
                    #expect(importedLayer < layerOf[module]!, "\(file.path) imports \(imported), which is not below \(module)")
                }
            }
        }
        #expect(checked > 100)
    }

    @Test func theStoreReadsNoFileFormats() throws {
        for module in ["HearthStore", "HearthStorePostgres"] {
            for file in try Self.swiftFiles(under: "Sources/\(module)") {
                #expect(!Self.imports(of: file.text).contains("HearthFormats"), "\(file.path) imports HearthFormats")
            }
        }
    }

    @Test func nothingReadsOutsideTheRepository() throws {
        // Spelled in parts, so that this file does not name them itself.
        let outside = ["..", "shared"].joined(separator: "/")
        var checked = 0
        for folder in ["Sources", "Tests", "scripts", ".ci"] {
            for file in try Self.files(under: folder) {
                checked += 1
                #expect(!file.text.contains(outside), "\(file.path) names \(outside)")
            }
        }
        #expect(checked > 100)
    }
}
