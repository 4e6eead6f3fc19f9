/// The bytes of `parley.keys`, the file ``FileKeyStore`` keeps (docs/FORMAT.md, "Key store"):
///
/// ```
/// file  := header frame*
/// frame := length:4 crc:4 entry+          one write, one fdatasync
/// entry := 'K' ownerLength:2 owner key:32 keyCRC:4      a key
///        | 'E' ownerLength:2 owner                       an erasure
/// ```
///
/// The frame's CRC-32C covers its length and its entries with every key slot (`key`, `keyCRC`: 36 bytes) read as
/// zeros, so destroying a key — overwriting its slot with zeros in place — leaves its frame's CRC valid, and the
/// slot's own CRC tells a live key from a destroyed one (all zeros) and from a torn overwrite (anything else).
enum KeyFileFormat {
    static let magic: [UInt8] = Array("PRLYKEYS".utf8)
    static let version: UInt16 = 1
    static let headerSize = 32
    static let frameHeaderSize = 8
    static let keyTag = UInt8(ascii: "K")
    static let erasureTag = UInt8(ascii: "E")
    /// A key and its CRC: what a destroy overwrites.
    static let slotSize = DataKey.byteCount + 4
    /// The most entry bytes one frame holds; more keys go in more frames.
    static let maximumFrameLength = 1 << 20

    /// The 32-byte file header.
    static func header(createdAt time: Int64) -> [UInt8] {
        var writer = BinaryWriter(capacity: headerSize)
        writer.write(bytes: magic)
        writer.writeUInt16(version)
        writer.writeUInt16(0)
        writer.writeUInt64(UInt64(bitPattern: time))
        writer.writeUInt64(0)
        writer.writeUInt32(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    /// Checks the header of a file's bytes.
    /// - Throws: `.corruptKeyStore` for a short file, a wrong magic or CRC; `.versionMismatch` for another version.
    static func checkHeader(_ bytes: [UInt8], path: String) throws(EventLogError) {
        guard bytes.count >= headerSize, Array(bytes[0..<8]) == magic else {
            throw EventLogError(
                .corruptKeyStore, "\(path) is not a Parley key store: its header is short or has the wrong magic")
        }
        guard CRC32C.checksum(Array(bytes[0..<28])) == readUInt32(bytes, at: 28) else {
            throw EventLogError(.corruptKeyStore, "\(path): the header fails its CRC at offset 0")
        }
        let found = UInt16(bytes[8]) | UInt16(bytes[9]) << 8
        guard found == version else {
            throw EventLogError(
                .versionMismatch, "\(path) is key store format version \(found); this build reads version \(version)")
        }
    }

    /// One entry to write.
    enum Entry {
        case key(KeyOwner, DataKey)
        case erasure(KeyOwner)
    }

    /// The frame holding `entries`, and the offset of each key's slot in it (from the frame's start).
    static func frame(_ entries: [Entry]) -> (bytes: [UInt8], slotOffsets: [Int]) {
        var writer = BinaryWriter(capacity: 64 * entries.count)
        writer.writeUInt32(0)
        writer.writeUInt32(0)
        var slots: [Int] = []
        for entry in entries {
            switch entry {
            case .key(let owner, let key):
                writer.write(keyTag)
                writer.writeUInt16(UInt16(owner.bytes.count))
                writer.write(bytes: owner.bytes)
                slots.append(writer.count)
                key.withUnsafeBytes { raw in
                    writer.write(bytes: raw)
                    writer.writeUInt32(CRC32C.checksum(raw))
                }
            case .erasure(let owner):
                writer.write(erasureTag)
                writer.writeUInt16(UInt16(owner.bytes.count))
                writer.write(bytes: owner.bytes)
            }
        }
        var bytes = writer.bytes
        let length = UInt32(bytes.count - frameHeaderSize)
        withUnsafeBytes(of: length.littleEndian) { bytes.replaceSubrange(0..<4, with: $0) }
        let crc = checksum(bytes, frameStart: 0, slots: slots)
        withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange(4..<8, with: $0) }
        return (bytes, slots)
    }

    /// The frame CRC: its length field and its entries, with each slot (offsets within `bytes`) read as zeros.
    static func checksum(_ bytes: [UInt8], frameStart: Int, slots: [Int]) -> UInt32 {
        let length = Int(readUInt32(bytes, at: frameStart))
        let end = frameStart + frameHeaderSize + length
        return bytes.withUnsafeBytes { raw in
            let zeros = [UInt8](repeating: 0, count: slotSize)
            var crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[frameStart..<(frameStart + 4)]))
            var from = frameStart + frameHeaderSize
            for slot in slots {
                crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[from..<slot]), continuing: crc)
                crc = zeros.withUnsafeBytes { CRC32C.checksum($0, continuing: crc) }
                from = slot + slotSize
            }
            return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[from..<end]), continuing: crc)
        }
    }

    /// What a key slot holds.
    enum SlotState: Equatable {
        case live
        /// All zeros: destroyed.
        case destroyed
        /// Neither: a destroy cut short, or damage.
        case damaged
    }

    static func slotState(_ bytes: [UInt8], at offset: Int) -> SlotState {
        if bytes[offset..<(offset + slotSize)].allSatisfy({ $0 == 0 }) { return .destroyed }
        let crc = bytes.withUnsafeBytes { raw in
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + DataKey.byteCount)]))
        }
        return crc == readUInt32(bytes, at: offset + DataKey.byteCount) ? .live : .damaged
    }

    /// An entry as read, with absolute offsets.
    struct ParsedEntry {
        var isKey: Bool
        var owner: KeyOwner
        /// The entry's first byte.
        var offset: Int
        /// For a key: the slot's first byte.
        var slot: Int?
    }

    /// A frame as read.
    struct ParsedFrame {
        var offset: Int
        var end: Int
        var entries: [ParsedEntry]
    }

    /// The frame at `offset` when it is whole and passes its CRC; nil otherwise.
    static func parseFrame(_ bytes: [UInt8], at offset: Int) -> ParsedFrame? {
        guard offset + frameHeaderSize <= bytes.count else { return nil }
        let length = Int(readUInt32(bytes, at: offset))
        let end = offset + frameHeaderSize + length
        guard length >= 4, length <= maximumFrameLength, end <= bytes.count else { return nil }
        var entries: [ParsedEntry] = []
        var cursor = offset + frameHeaderSize
        while cursor < end {
            guard cursor + 3 <= end else { return nil }
            let tag = bytes[cursor]
            let ownerLength = Int(bytes[cursor + 1]) | Int(bytes[cursor + 2]) << 8
            guard tag == keyTag || tag == erasureTag, ownerLength >= 1, ownerLength <= KeyOwner.maximumByteCount
            else { return nil }
            let ownerEnd = cursor + 3 + ownerLength
            let entryEnd = tag == keyTag ? ownerEnd + slotSize : ownerEnd
            guard entryEnd <= end else { return nil }
            entries.append(
                ParsedEntry(
                    isKey: tag == keyTag, owner: KeyOwner(bytes: Array(bytes[(cursor + 3)..<ownerEnd])),
                    offset: cursor, slot: tag == keyTag ? ownerEnd : nil))
            cursor = entryEnd
        }
        let slots = entries.compactMap(\.slot)
        guard checksum(bytes, frameStart: offset, slots: slots) == readUInt32(bytes, at: offset + 4) else {
            return nil
        }
        return ParsedFrame(offset: offset, end: end, entries: entries)
    }

    /// Whether a whole frame that passes its CRC starts anywhere after `offset` (is a bad frame there damage
    /// rather than a torn tail?).
    static func hasFrame(_ bytes: [UInt8], after offset: Int) -> Bool {
        var candidate = offset + 1
        while candidate + frameHeaderSize <= bytes.count {
            if parseFrame(bytes, at: candidate) != nil { return true }
            candidate += 1
        }
        return false
    }

    static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}

extension KeyFileFormat {
    /// What the store knows of one owner.
    enum Slot {
        /// A live key, and where its slot is in the file.
        case live(DataKey, slot: Int)
        /// Erased; the slot the key had, if it had one.
        case erased(slot: Int?)
    }

    /// The outcome of reading the frames of a file.
    struct Scan {
        /// The end of the last frame taken: where the next write goes (the bytes after it are a torn tail).
        var end: Int
        /// Slots of erased owners that do not hold zeros yet (a destroy cut short): a writer zeroes them.
        var unfinishedDestroys: [Int] = []
    }

    /// Reads the frames of `bytes` — the file's bytes from offset `base` on — into `table`.
    ///
    /// A frame that fails its checks with no good frame after it is a torn tail; so is a last frame that passes
    /// its CRC but reaches the end of the file with a key slot that is neither a key nor erased (its slots were not
    /// all written). Anything else that fails is damage.
    /// - Throws: `.corruptKeyStore` naming `path` and the offset: a damaged frame before the end, a damaged or
    ///   zeroed slot of an owner never erased, a second key for an owner, a key after the owner's erasure.
    static func scan(_ bytes: [UInt8], base: Int, into table: inout [KeyOwner: Slot], path: String)
        throws(EventLogError) -> Scan
    {
        var frames: [ParsedFrame] = []
        var offset = 0
        while offset < bytes.count {
            if let frame = parseFrame(bytes, at: offset) {
                frames.append(frame)
                offset = frame.end
                continue
            }
            if hasFrame(bytes, after: offset) {
                throw EventLogError(
                    .corruptKeyStore,
                    "\(path): the frame at offset \(base + offset) is damaged and good frames follow it; restore the "
                        + "key store from a backup (its keys cannot be made again)")
            }
            break
        }
        var erased = Set<KeyOwner>()
        for frame in frames { for entry in frame.entries where !entry.isKey { erased.insert(entry.owner) } }
        for (owner, slot) in table { if case .erased = slot { erased.insert(owner) } }

        // A last frame whose slots were not all written before a crash: it reaches the end of the file (nothing
        // torn after it), and a key in it is neither whole nor erased.
        if offset == bytes.count, let last = frames.last,
            last.entries.contains(where: { entry in
                guard let slot = entry.slot else { return false }
                return slotState(bytes, at: slot) != .live && !erased.contains(entry.owner)
            })
        {
            frames.removeLast()
        }

        var scan = Scan(end: base + (frames.last?.end ?? 0))
        for frame in frames {
            for entry in frame.entries {
                guard let slot = entry.slot else {
                    switch table[entry.owner] {
                    case .erased:
                        break
                    case .live(_, let keySlot):
                        // A key read by an earlier scan (a reader's): only a writer, which reads the whole file
                        // at once, finishes the destroy.
                        table[entry.owner] = .erased(slot: keySlot)
                        if keySlot >= base, slotState(bytes, at: keySlot - base) != .destroyed {
                            scan.unfinishedDestroys.append(keySlot)
                        }
                    case nil:
                        table[entry.owner] = .erased(slot: nil)
                    }
                    continue
                }
                if table[entry.owner] != nil {
                    throw EventLogError(
                        .corruptKeyStore,
                        "\(path): the key for \(entry.owner) at offset \(base + entry.offset) follows an earlier "
                            + "key or an erasure of the same owner")
                }
                let state = slotState(bytes, at: slot)
                if erased.contains(entry.owner) {
                    // Its erasure comes later in the file.
                    table[entry.owner] = .erased(slot: base + slot)
                    if state != .destroyed { scan.unfinishedDestroys.append(base + slot) }
                    continue
                }
                guard state == .live, let key = DataKey(bytes: bytes[slot..<(slot + DataKey.byteCount)]) else {
                    throw EventLogError(
                        .corruptKeyStore,
                        "\(path): the key slot of \(entry.owner) at offset \(base + slot) is "
                            + (state == .destroyed ? "zeroed but the owner was never erased" : "damaged")
                            + "; restore the key store from a backup (its keys cannot be made again)")
                }
                table[entry.owner] = .live(key, slot: base + slot)
            }
        }
        return scan
    }
}
