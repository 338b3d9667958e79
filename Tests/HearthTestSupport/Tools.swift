import Foundation

/// Programs from Debian's packages the tests drive (espeak-ng, sox, ffmpeg).
public enum Tools {
    /// The path of `name` in /usr/bin or /usr/local/bin, or an error naming the package to install.
    public static func path(_ name: String, package: String? = nil) throws -> URL {
        guard let path = ["/usr/bin/", "/usr/local/bin/"].map({ $0 + name }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestFiles.Missing(description: "\(name) is missing: apt install \(package ?? name)")
        }
        return URL(fileURLWithPath: path)
    }

    /// Runs `name` with `arguments` to its end and returns its exit status.
    @discardableResult
    public static func run(_ name: String, _ arguments: [String], package: String? = nil) throws -> Int32 {
        try Child.run(try path(name, package: package), arguments).status
    }

    /// espeak-ng's speech of `text` (with `options` such as a voice) as 16 kHz mono 16-bit PCM
    /// at `wav`, resampled by sox without dither (so the same text always gives the same samples)
    /// and cut after `seconds` when given.
    public static func speech(_ text: String, options: [String] = [], to wav: URL, seconds: Int? = nil) throws {
        let raw = wav.deletingPathExtension().appendingPathExtension("raw.wav")
        defer { try? FileManager.default.removeItem(at: raw) }
        guard try run("espeak-ng", options + ["-w", raw.path, text]) == 0 else {
            throw TestFiles.Missing(description: "espeak-ng failed to speak")
        }
        let trim = seconds.map { ["trim", "0", String($0)] } ?? []
        guard try run("sox", ["-D", raw.path, "-r", "16000", "-c", "1", "-b", "16", wav.path] + trim) == 0 else {
            throw TestFiles.Missing(description: "sox failed to resample espeak-ng's speech")
        }
    }
}

/// Debian pocketsphinx-testdata's speech clips (16 kHz mono WAV with transcripts) and the
/// Whisper fixtures made from them.
public enum SpeechClips {
    public static let directory = URL(fileURLWithPath: "/usr/share/pocketsphinx/test/data")

    public static func url(_ clip: String) throws -> URL {
        let url = directory.appendingPathComponent(clip)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw TestFiles.Missing(description: "\(url.path) is missing: install Debian's pocketsphinx-testdata (apt install pocketsphinx-testdata).")
        }
        return url
    }

    public static func fixture(_ name: String) -> URL {
        TestFiles.packageRoot.appendingPathComponent("Tests/Fixtures/whisper").appendingPathComponent(name)
    }
}
