#pragma once
// One include for daemon/app/registry.cpp: the factories of the
// bcachefs, XFS, ext4 and md probes (libraries fsaudit_probe_{bcachefs,xfs,ext4,md}).
#include "probes/bcachefs/bcachefs.hpp"
#include "probes/ext4/ext4.hpp"
#include "probes/md/md.hpp"
#include "probes/xfs/xfs.hpp"
