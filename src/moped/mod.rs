//! The MOPED device (paper, section 4): one per core, beside its L2 controller.
//!
//! The device is plain Rust with a narrow interface to whatever hosts it (the embedded
//! simulator here, gem5 through a C ABI later): port accesses, messages from other MOPEDs
//! and the L2 controller's answers come in; coherence requests, messages and port answers
//! go out, each stamped with the host's cycle. Nothing here knows the event engine.
//!
//! Parts, one file each:
//! - `ports`: the MMIO data and poll ports and the values that travel through them;
//! - `desc`: the outstanding descriptor table and its status bits;
//! - `matching`: MPI matching at the matching MOPED, and a reference model of it;
//! - `xlate`: the page walker, reading the tables of `os::pagetable`;
//! - `copy`: the copy unit with its send and receive lines;
//! - `engines`: the device's work as steps on one or more engines, shared by a scheme.

pub mod copy;
pub mod desc;
pub mod device;
pub mod engines;
pub mod matching;
pub mod ports;
pub mod xlate;

/// A MOPED's index: the same as its core's.
pub type MopedId = u16;

/// A descriptor ID inside the device: the MOPED that holds the descriptor and the
/// descriptor's index in that MOPED's table, so stores and polls from a process that moved
/// cores can be forwarded to the right MOPED.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DescId {
    pub moped: MopedId,
    pub index: desc::DescIndex,
}

/// How a descriptor ID is laid out in the 16 bits port values carry: the MOPED in the high
/// bits, as many as the system's MOPEDs need, and the index in the rest. The paper's 16
/// MOPEDs leave 12 bits, so a process can reserve up to 4,096 descriptors at one MOPED;
/// a 2-core system 32,768. Processes treat the 16 bits as opaque.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdFormat {
    index_bits: u32,
}

impl IdFormat {
    /// The layout for a system of `mopeds` MOPEDs; refused when the MOPED number would
    /// leave no index bit.
    pub fn for_mopeds(mopeds: usize) -> Result<IdFormat, ports::PortError> {
        let moped_bits = usize::BITS - mopeds.max(1).saturating_sub(1).leading_zeros();
        if moped_bits >= 16 {
            return Err(ports::PortError::TooManyMopeds { mopeds });
        }
        Ok(IdFormat {
            index_bits: 16 - moped_bits,
        })
    }

    /// Entries of a table that a descriptor ID can name.
    pub fn max_index(self) -> usize {
        1 << self.index_bits
    }

    /// The 16 bits of `id`; its index must be below [`IdFormat::max_index`].
    pub fn encode(self, id: DescId) -> u16 {
        debug_assert!((id.index as usize) < self.max_index());
        ((id.moped as u32) << self.index_bits | id.index as u32) as u16
    }

    pub fn decode(self, bits: u16) -> DescId {
        DescId {
            moped: (bits as u32 >> self.index_bits) as MopedId,
            index: (bits as u32 & ((1 << self.index_bits) - 1)) as desc::DescIndex,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desc_ids_round_trip_through_their_bits() {
        for (mopeds, index_bits) in [(1, 16), (2, 15), (16, 12), (17, 11), (64, 10), (1024, 6)] {
            let f = IdFormat::for_mopeds(mopeds).unwrap();
            assert_eq!(f.max_index(), 1 << index_bits, "{mopeds} MOPEDs");
            for moped in [0, mopeds / 2, mopeds - 1] {
                for index in [0, 1, f.max_index() - 1] {
                    let id = DescId {
                        moped: moped as MopedId,
                        index: index as desc::DescIndex,
                    };
                    assert_eq!(f.decode(f.encode(id)), id);
                }
            }
        }
        let f = IdFormat::for_mopeds(16).unwrap();
        let id = DescId {
            moped: 15,
            index: 63,
        };
        assert_eq!(f.encode(id), 0xf03f);
        assert!(IdFormat::for_mopeds(1 << 16).is_err());
    }
}
