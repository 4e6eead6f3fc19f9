import EventLog

/// How the crash writer (`Tests/CrashWriter`) derives each record from its id, and how the crash tests check
/// a survivor's bytes from the `position id` line alone: one derivation, used by both.
///
/// The id's high half is the run's seed, its low half the producer (top 16 bits) and the producer's sequence.
/// Producer 0 writes 200-byte `Bulk` records (600 per call: a group of several batches); the others write
/// `Small` records of 0 B – 8 KiB.
public enum CrashRecipe {
    public static func proposed(id: EventID) -> ProposedRecord {
        var random = SeededGenerator(seed: id.high &* 0xD6E8_FEB8_6659_FD93 ^ id.low)
        let producer = id.low >> 48
        let first = random.next()
        let length: Int
        if producer == 0 {
            length = 200
        } else if first % 16 == 0 {
            length = 1000 + Int((first >> 8) % 7000)
        } else {
            length = Int((first >> 8) % 300)
        }
        return ProposedRecord(
            id: id, stream: StreamName("crash:\((first >> 24) % 50)"), type: producer == 0 ? "Bulk" : "Small",
            actor: "p\(producer)", payload: random.bytes(length))
    }

    /// What the command mode's users and rooms are called.
    public static let commandUsers = 64
    public static func user(_ number: Int) -> String { "c\(number % commandUsers)" }
    public static func room(_ producer: Int) -> String { "crash-room-\(producer)" }
}
