import ArgumentParser
import Hearth

/// `hearth tokenize MODEL TEXT`: the token ids a model's own tokenizer gives for a text.
struct TokenizeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokenize",
        abstract: "Print the token ids of a text, as the model's tokenizer gives them."
    )

    @Argument(help: "Path to a GGUF model file.")
    var model: String

    @Argument(help: "The text to tokenize.")
    var text: String

    @Flag(help: "Turn special-token text such as <|im_start|> into the special tokens.")
    var special = false

    @Flag(name: .customLong("no-bos"), help: "Do not add BOS (or EOS) even where the model asks for it.")
    var noBOS = false

    @Flag(help: "Print each token's id and text on a line of its own.")
    var pieces = false

    func run() async throws {
        let file = try GGUFFile(path: model)
        let tokenizer = try TokenizerLoader.load(from: file)
        let ids = tokenizer.encode(text, addSpecial: !noBOS, parseSpecial: special)
        if pieces {
            for id in ids {
                print("\(id)\t\(Self.display(tokenizer.tokenBytes(id)))")
            }
        } else {
            print("[" + ids.map(String.init).joined(separator: ", ") + "]")
        }
    }

    /// A token's bytes as a quoted, escaped string; bytes that are only part of a character
    /// (byte tokens, byte-level BPE pieces) are shown in hex.
    static func display(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) {
            return String(reflecting: text)
        }
        return bytes.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return "\\x" + (byte < 0x10 ? "0" + hex : hex)
        }.joined()
    }
}
