import HearthCore
import Testing

@Suite struct EscapeTableTests {
    @Test func tableCharactersBecomeTheirTextOthersStay() {
        let table = EscapeTable(["<": "&lt;", "&": "&amp;"])
        var out = "["
        table.escape("a<b & é😀", into: &out)
        #expect(out == "[a&lt;b &amp; é😀")
        #expect(table["<"] == "&lt;")
        #expect(table["b"] == nil)
        #expect(table["é"] == nil)
    }

    @Test func otherCharactersGoThroughTheWritersRule() {
        let table = EscapeTable(["\n": "\\n"])
        var out = ""
        table.escape("x\ny\u{7}", into: &out) { scalar, out in
            if scalar.value < 0x20 { out += "\\x" + EscapeTable.hex(scalar.value, width: 2) } else { out.unicodeScalars.append(scalar) }
        }
        #expect(out == "x\\ny\\x07")
    }

    @Test(arguments: [(0 as UInt32, 4, "0000"), (0x1F, 2, "1f"), (0xABCDE, 4, "abcde"), (0x10FFFF, 8, "0010ffff")])
    func hexIsLowercaseAndZeroPadded(value: UInt32, width: Int, expected: String) {
        #expect(EscapeTable.hex(value, width: width) == expected)
    }
}
