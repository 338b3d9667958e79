import HearthCore
import Testing

@Suite struct HumanReadableTests {
    @Test(arguments: [
        (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (1_048_524, "1023.9 KiB"),
        (1_048_575, "1.0 MiB"), (98_362_432, "93.8 MiB"), (253_113_024, "241.4 MiB"), (5 << 30, "5.0 GiB"),
        (Int.max, "8192.0 PiB"),
    ])
    func bytes(value: Int, expected: String) {
        #expect(HumanReadable.bytes(value) == expected)
    }

    @Test(arguments: [
        (0, "0"), (999, "999"), (1000, "1.0K"), (134_515_008, "134.5M"), (268_098_176, "268.1M"),
        (999_960, "1.0M"), (7_241_732_096, "7.2B"), (1_000_000_000_000, "1.0T"),
    ])
    func counts(value: Int, expected: String) {
        #expect(HumanReadable.count(value) == expected)
    }
}
