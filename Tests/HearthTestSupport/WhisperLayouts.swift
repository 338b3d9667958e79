import Crypto
import Foundation

/// The whisper-base weights of `models/whisper-base` in the Hugging Face and whisper.cpp
/// layouts, written by `scripts/make-whisper-layouts.py` (they are 70-145 MB each, so they are
/// never committed). They go to `.build/whisper-layouts/<stamp>`, git-ignored, and are written
/// again only when the script or the model changes: the stamp is the sha256 of both.
public enum WhisperLayouts {
    /// The folder holding `hf/`, `ggml-base.bin` and `ggml-base-q8_0.bin`.
    public static var directory: URL {
        get throws { try made.get() }
    }

    /// The Hugging Face folder.
    public static var huggingFace: URL {
        get throws { try directory.appendingPathComponent("hf") }
    }

    /// The whisper.cpp file, F16 like whisper.cpp's own.
    public static var ggml: URL {
        get throws { try directory.appendingPathComponent("ggml-base.bin") }
    }

    /// The whisper.cpp file quantized to Q8_0.
    public static var ggmlQ8_0: URL {
        get throws { try directory.appendingPathComponent("ggml-base-q8_0.bin") }
    }

    /// Made once per test process; a run that finds them made reuses them.
    private static let made = Result { try make() }

    private static func make() throws -> URL {
        let model = try TestFiles.modelURL("whisper-base")
        let script = TestFiles.packageRoot.appendingPathComponent("scripts/make-whisper-layouts.py")
        var hash = SHA256()
        hash.update(data: try Data(contentsOf: script))
        // The model is 145 MB: its size and modification time stand for its bytes.
        let attributes = try FileManager.default.attributesOfItem(atPath: model.appendingPathComponent("model.bin").path)
        hash.update(data: Data("\(attributes[.size] ?? 0) \(attributes[.modificationDate] ?? 0)".utf8))
        let stamp = hash.finalize().map { String(format: "%02x", $0) }.joined().prefix(16)
        let root = TestFiles.packageRoot.appendingPathComponent(".build/whisper-layouts")
        let target = root.appendingPathComponent(String(stamp))
        if FileManager.default.fileExists(atPath: target.appendingPathComponent("ggml-base-q8_0.bin").path) { return target }

        guard Python.canImport("numpy, safetensors") else {
            throw TestFiles.Missing(description: "The Whisper layout tests write their files with scripts/make-whisper-layouts.py, which needs numpy and safetensors: pip install numpy safetensors")
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // Written aside and renamed, so that a run killed half way (or two runs at once) never
        // leaves a half-written folder under the stamp.
        let partial = root.appendingPathComponent("partial-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: partial) }
        let (status, _, message) = try Child.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, partial.path, model.path])
        guard status == 0 else {
            throw TestFiles.Missing(description: "scripts/make-whisper-layouts.py failed: \(String(decoding: message, as: UTF8.self))")
        }
        // Older stamps are of an older script or model.
        for old in (try? FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)) ?? []
        where old.lastPathComponent != target.lastPathComponent && !old.lastPathComponent.hasPrefix("partial-") {
            try? FileManager.default.removeItem(at: old)
        }
        do {
            try FileManager.default.moveItem(at: partial, to: target)
        } catch where FileManager.default.fileExists(atPath: target.appendingPathComponent("ggml-base-q8_0.bin").path) {
            // Another run got there first with the same files.
        }
        return target
    }
}
