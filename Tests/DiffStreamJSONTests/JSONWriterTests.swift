import DiffStreamJSON
import Testing

struct JSONWriterTests {
    @Test(arguments: [0, 7, 9, 10, 42, 1_234_567, -1, -10, -987_654, Int.max, Int.min, Int.max - 1, Int.min + 1])
    func integersAreWrittenAsTheirDecimalDigits(number: Int) {
        var writer = JSONWriter()
        writer.raw("[")
        writer.write(number)
        writer.raw("]")
        #expect(writer.bytes == Array("[\(number)]".utf8))
    }
}
