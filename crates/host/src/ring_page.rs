//! Decoding the binary pages a per-CPU `trace_pipe_raw` gives: the ring buffer's own format, so
//! the kernel formats no text and the reader parses none.
//!
//! A page (`struct buffer_data_page`, kernel/trace/ring_buffer.c) is a u64 timestamp, a
//! `commit` word (bytes of events; bit 31 set when events were lost before this page, bit 30
//! when their count is stored as a long right after the events) and the events. Offsets come
//! from `events/header_page`. Each event starts with a 32-bit word: `type_len` in the low 5
//! bits, a 27-bit time delta above (`struct ring_buffer_event`). `type_len` 1..=28 is a data
//! event of `type_len * 4` bytes; 0 a data event whose length (+4) is in the next word; 29
//! padding (length in the next word; a null padding, delta 0, ends the page); 30 a time
//! extend (delta += next word << 27); 31 an absolute time stamp. A reader adds every delta,
//! padding's too, as libtraceevent's kbuffer does.

/// Where a page's fields are, from `events/header_page`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageLayout {
    pub timestamp: usize,
    pub commit: usize,
    /// 8 on 64-bit kernels.
    pub commit_size: usize,
    pub data: usize,
    /// Bytes of event data a page holds (the page size less the header).
    pub data_size: usize,
}

impl PageLayout {
    /// Parse `events/header_page`, e.g. `\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;`.
    pub fn parse(text: &str) -> Option<PageLayout> {
        let field = |name: &str| -> Option<(usize, usize)> {
            let l = text.lines().find(|l| {
                l.split(';')
                    .next()
                    .and_then(|d| d.split_whitespace().last())
                    == Some(name)
            })?;
            let num = |key: &str| -> Option<usize> {
                let i = l.find(key)?;
                l[i + key.len()..].split(';').next()?.trim().parse().ok()
            };
            Some((num("offset:")?, num("size:")?))
        };
        let (timestamp, ts_size) = field("timestamp")?;
        let (commit, commit_size) = field("commit")?;
        let (data, data_size) = field("data")?;
        (ts_size == 8 && (commit_size == 4 || commit_size == 8) && data > commit).then_some(
            PageLayout {
                timestamp,
                commit,
                commit_size,
                data,
                data_size,
            },
        )
    }

    /// The whole page: what one read of `trace_pipe_raw` asks for.
    pub fn page_size(&self) -> usize {
        self.data + self.data_size
    }
}

const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const TS_SHIFT: u32 = 27;
/// An absolute time stamp holds 59 bits; the top 5 come from the running time.
const TS_MSB: u64 = 0xf8 << 56;

/// What a page said besides its events.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PageInfo {
    /// Data events on the page.
    pub events: u64,
    /// Events the ring buffer dropped before this page: the stored count, or 1 when the
    /// kernel flagged a loss without room to store how many.
    pub lost: u64,
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// Decode one page, calling `event(timestamp_ns, payload)` for each data event in order.
/// `None` if the page is malformed (an event running past the committed bytes).
pub fn decode(page: &[u8], l: &PageLayout, mut event: impl FnMut(u64, &[u8])) -> Option<PageInfo> {
    let mut ts = u64_at(page, l.timestamp)?;
    let flags = if l.commit_size == 8 {
        u64_at(page, l.commit)?
    } else {
        u64::from(u32_at(page, l.commit)?)
    };
    let size = (flags & COMMIT_MASK) as usize;
    let data = page.get(l.data..l.data + size)?;
    let mut info = PageInfo::default();
    if flags & MISSED_EVENTS != 0 {
        info.lost = if flags & MISSED_STORED != 0 {
            if l.commit_size == 8 {
                u64_at(page, l.data + size)?
            } else {
                u64::from(u32_at(page, l.data + size)?)
            }
        } else {
            1
        };
    }
    let mut i = 0;
    while i + 4 <= data.len() {
        let w = u32_at(data, i)?;
        let (type_len, delta) = (w & 0x1f, u64::from(w >> 5));
        i += 4;
        match type_len {
            29 => {
                if delta == 0 {
                    break; // null padding: the rest of the page is empty
                }
                ts += delta;
                i += u32_at(data, i)? as usize;
            }
            30 => {
                ts += delta + (u64::from(u32_at(data, i)?) << TS_SHIFT);
                i += 4;
            }
            31 => {
                let abs = delta + (u64::from(u32_at(data, i)?) << TS_SHIFT);
                ts = abs | (ts & TS_MSB);
                i += 4;
            }
            0 => {
                let len = (u32_at(data, i)? as usize).checked_sub(4)?;
                let payload = data.get(i + 4..i + 4 + len)?;
                ts += delta;
                event(ts, payload);
                info.events += 1;
                i += 4 + len.next_multiple_of(4);
            }
            n => {
                let len = n as usize * 4;
                ts += delta;
                event(ts, data.get(i..i + len)?);
                info.events += 1;
                i += len;
            }
        }
    }
    Some(info)
}

/// A field of an event's `format` file: offset and size in the payload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Field {
    pub offset: usize,
    pub size: usize,
}

impl Field {
    /// The field as a little-endian integer (sign-extended when `signed` and shorter than 8).
    pub fn int(&self, payload: &[u8], signed: bool) -> Option<i64> {
        let b = payload.get(self.offset..self.offset + self.size)?;
        let mut v = [0u8; 8];
        if self.size > 8 {
            return None;
        }
        v[..self.size].copy_from_slice(b);
        let u = u64::from_le_bytes(v);
        let shift = 64 - 8 * self.size as u32;
        Some(if signed && shift > 0 && shift < 64 {
            ((u << shift) as i64) >> shift
        } else {
            u as i64
        })
    }

    /// The field as a NUL-terminated string (`char name[16]`).
    pub fn str<'a>(&self, payload: &'a [u8]) -> Option<&'a [u8]> {
        let b = payload.get(self.offset..self.offset + self.size)?;
        Some(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())])
    }
}

/// An event's id and fields, from its `format` file
/// (`\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;`).
#[derive(Clone, Debug, PartialEq)]
pub struct EventFormat {
    pub id: u16,
    pub fields: Vec<(String, Field)>,
}

impl EventFormat {
    pub fn parse(text: &str) -> Option<EventFormat> {
        let id = text
            .lines()
            .find_map(|l| l.strip_prefix("ID:"))?
            .trim()
            .parse()
            .ok()?;
        let fields = text
            .lines()
            .filter_map(|l| {
                let l = l.trim().strip_prefix("field:")?;
                let mut parts = l.split(';').map(str::trim);
                let decl = parts.next()?;
                // "char prev_comm[16]" → "prev_comm"
                let name = decl.split_whitespace().last()?.split('[').next()?;
                let mut get =
                    |key: &str| -> Option<usize> { parts.next()?.strip_prefix(key)?.parse().ok() };
                let offset = get("offset:")?;
                let size = get("size:")?;
                Some((name.to_string(), Field { offset, size }))
            })
            .collect();
        Some(EventFormat { id, fields })
    }

    pub fn field(&self, name: &str) -> Option<Field> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, f)| *f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    fn layout() -> PageLayout {
        PageLayout::parse(HEADER_PAGE).unwrap()
    }

    /// A page with `events` (header word fields, extra words) after a time stamp of 1000.
    fn page(flags: u64, words: &[u32], after: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        p[..8].copy_from_slice(&1000u64.to_le_bytes());
        let size = (words.len() * 4) as u64;
        p[8..16].copy_from_slice(&(size | flags).to_le_bytes());
        for (k, w) in words.iter().enumerate() {
            p[16 + 4 * k..20 + 4 * k].copy_from_slice(&w.to_le_bytes());
        }
        let end = 16 + words.len() * 4;
        p[end..end + after.len()].copy_from_slice(after);
        p
    }

    fn hdr(type_len: u32, delta: u32) -> u32 {
        type_len | delta << 5
    }

    #[test]
    fn parses_the_header_page() {
        assert_eq!(
            layout(),
            PageLayout {
                timestamp: 0,
                commit: 8,
                commit_size: 8,
                data: 16,
                data_size: 4080
            }
        );
        assert_eq!(layout().page_size(), 4096);
        assert_eq!(PageLayout::parse("garbage"), None);
    }

    #[test]
    fn walks_deltas_extends_padding_and_long_events() {
        let words = [
            hdr(1, 5),
            0xaaaa, // 4-byte event at 1005
            hdr(30, 3),
            2,         // time extend: +3 + 2<<27
            hdr(2, 1), // 8-byte event
            0xb1,
            0xb2,
            hdr(29, 7), // discarded event: its delta counts, 8 bytes skipped
            8,
            0xdead,
            hdr(0, 2), // long form: length 12 = 8 bytes of data + the length word
            12,
            0xc1,
            0xc2,
        ];
        let mut seen = Vec::new();
        let info = decode(&page(0, &words, &[]), &layout(), |ts, p| {
            seen.push((ts, p.to_vec()))
        })
        .unwrap();
        let ext = 1005 + 3 + (2u64 << 27);
        assert_eq!(
            seen,
            vec![
                (1005, 0xaaaau32.to_le_bytes().to_vec()),
                (
                    ext + 1,
                    [0xb1u32.to_le_bytes(), 0xb2u32.to_le_bytes()].concat()
                ),
                (
                    ext + 1 + 7 + 2,
                    [0xc1u32.to_le_bytes(), 0xc2u32.to_le_bytes()].concat()
                ),
            ]
        );
        assert_eq!(info, PageInfo { events: 3, lost: 0 });
    }

    #[test]
    fn absolute_stamps_null_padding_and_lost_counts() {
        let words = [hdr(31, 9), 1, hdr(1, 0), 7, hdr(29, 0), 0, hdr(1, 1), 8];
        let mut seen = Vec::new();
        let info = decode(
            &page(MISSED_EVENTS | MISSED_STORED, &words, &42u64.to_le_bytes()),
            &layout(),
            |ts, _| seen.push(ts),
        )
        .unwrap();
        assert_eq!(seen, vec![9 + (1 << 27)], "null padding ends the page");
        assert_eq!(info.lost, 42);
        let info = decode(&page(MISSED_EVENTS, &[], &[]), &layout(), |_, _| {}).unwrap();
        assert_eq!(info, PageInfo { events: 0, lost: 1 });
    }

    #[test]
    fn rejects_events_past_the_commit() {
        // A 16-byte event in a page whose commit holds only 8 bytes.
        let p = page(0, &[hdr(4, 1), 1], &[]);
        assert_eq!(decode(&p, &layout(), |_, _| {}), None);
        assert_eq!(decode(&p[..10], &layout(), |_, _| {}), None);
    }

    #[test]
    fn reads_an_event_format() {
        let f = EventFormat::parse(include_str!("../tests/data/sched_switch.format")).unwrap();
        assert_eq!(f.id, 372);
        assert_eq!(
            f.field("prev_pid"),
            Some(Field {
                offset: 24,
                size: 4
            })
        );
        assert_eq!(
            f.field("next_comm"),
            Some(Field {
                offset: 40,
                size: 16
            })
        );
        assert_eq!(
            f.field("prev_state"),
            Some(Field {
                offset: 32,
                size: 8
            })
        );
        let mut p = vec![0u8; 64];
        p[24..28].copy_from_slice(&(-2i32).to_le_bytes());
        p[40..45].copy_from_slice(b"abc\0z");
        assert_eq!(f.field("prev_pid").unwrap().int(&p, true), Some(-2));
        assert_eq!(f.field("next_comm").unwrap().str(&p), Some(&b"abc"[..]));
    }
}
