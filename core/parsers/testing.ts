/**
 * Short synthetic tool outputs, written for the tests in the layouts the real tools print (the
 * real outputs in ../shared/fixtures/real/ are the richer layer, and not every clone has
 * them). Every parser has at least one sample here, so a clone without ../shared still tests
 * each of them; each sample says what a correct parse yields in its comment.
 */

/** `npu-smi info`, 910B layout: NPU 0 (OK, 41 °C, 124.9 W, HBM 59718/65536) and NPU 1 (Critical, NA power). */
export const NPU_SMI_910B_TABLE = [
  '+------------------------------------------------------------------------------------------------+',
  '| npu-smi 24.1.0                   Version: 24.1.0                                               |',
  '+---------------------------+---------------+----------------------------------------------------+',
  '| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|',
  '| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |',
  '+===========================+===============+====================================================+',
  '| 0     910B3               | OK            | 124.9       41                0    / 0             |',
  '| 0                         | 0000:C1:00.0  | 27          0    / 0          59718/ 65536         |',
  '+===========================+===============+====================================================+',
  '| 1     910B3               | Critical      | NA          91                0    / 0             |',
  '| 0                         | 0000:C2:00.0  | -           0    / 0          NA   / 65536         |',
  '+===========================+===============+====================================================+',
  '+---------------------------+---------------+----------------------------------------------------+',
  '| NPU   Chip                | Process id    | Process name             | Process memory(MB)      |',
  '+===========================+===============+====================================================+',
  '| No running processes found in NPU 0                                                            |',
  '+===========================+===============+====================================================+',
  '',
].join('\n');

/** `npu-smi info`, A3 layout (`Chip Phy-ID`): NPU 0 with chips 0 and 1 (phy ids 0, 1; chip 1 power `-`). */
export const NPU_SMI_A3_TABLE = [
  '+------------------------------------------------------------------------------------------------+',
  '| npu-smi 25.2.0                   Version: 25.2.0                                               |',
  '+---------------------------+---------------+----------------------------------------------------+',
  '| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|',
  '| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |',
  '+===========================+===============+====================================================+',
  '| 0     Ascend910           | OK            | 162.8       37                0    / 0             |',
  '| 0     0                   | 0000:9C:00.0  | 0           0    / 0          3133 / 65536         |',
  '+------------------------------------------------------------------------------------------------+',
  '| 0     Ascend910           | OK            | -           38                0    / 0             |',
  '| 1     1                   | 0000:9E:00.0  | 0           0    / 0          2876 / 65536         |',
  '+===========================+===============+====================================================+',
  '',
].join('\n');

/** `npu-smi info`, 310P Duo layout (`Chip Device`): card 2944 with chips 0 (45 °C) and 1 (47 °C), NA power. */
export const NPU_SMI_310P_TABLE = [
  '+--------------------------------------------------------------------------------------------------------+',
  '| npu-smi 25.5.1                                   Version: 25.5.1                                       |',
  '+-------------------------------+-----------------+------------------------------------------------------+',
  '| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |',
  '| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |',
  '+===============================+=================+======================================================+',
  '| 2944    310P3                 | OK              | NA           45                0     / 0             |',
  '| 0       0                     | 0000:0C:00.0    | 0            1255 / 44278                            |',
  '+-------------------------------+-----------------+------------------------------------------------------+',
  '| 2944    310P3                 | Alarm           | NA           47                0     / 0             |',
  '| 1       1                     | 0000:0C:00.0    | 0            1472 / 43693                            |',
  '+===============================+=================+======================================================+',
  '',
].join('\n');

/** `npu-smi info -t health -i 1 -c 0`: Alarm with two fault codes and a two-line Error Information. */
export const NPU_SMI_T_HEALTH = [
  '\tHealth Status                  : Alarm',
  '\tError Code                     : A4025021 8C03A000',
  '\tError Information              : heart beat lost',
  '',
  '\t                               : node type=adda, event state=Heartbeat Lost.',
  '',
].join('\n');

/** `npu-smi info -t ecc -i 1`: HBM single 7, double 1; DDR single 2, double NA. */
export const NPU_SMI_T_ECC = [
  '\tNPU ID                         : 1',
  '\tChip Count                     : 1',
  '',
  '\tDDR Single Bit Error Count     : 2',
  '\tDDR Double Bit Error Count     : NA',
  '\tHBM Single Bit Error Count     : 7',
  '\tHBM Double Bit Error Count     : 1',
  '\tChip ID                        : 0',
  '',
].join('\n');

/** `npu-smi info -t power -i 2944`: the MCU block says 42.9 W for the card. */
export const NPU_SMI_T_POWER = [
  '\tNPU ID                         : 2944',
  '\tChip Count                     : 2',
  '',
  '\tPower Dissipation(W)           : 42.9',
  '\tChip Name                      : MCU',
  '',
].join('\n');

/** `npu-smi info -m`: NPU 0 with chip 0 (logic id 0) and its MCU row (logic id `-`). */
export const NPU_SMI_MAPPING = [
  '\tNPU ID                         Chip ID                        Chip Logic ID                  Chip Name',
  '\t0                              0                              0                              Ascend 310P3',
  '\t0                              1                              -                              Mcu',
  '',
].join('\n');

/** `--query-gpu=index,name,temperature.gpu,power.draw,memory.used,count --format=csv`: GPUs 0 and 1. */
export const NVIDIA_CSV = [
  'index, name, temperature.gpu, power.draw [W], memory.used [MiB], ecc.errors.uncorrected.volatile.total, count',
  '0, NVIDIA H100 80GB HBM3, 34, 71.20 W, 3 MiB, 0, 2',
  '1, NVIDIA H100 80GB HBM3, 36, [N/A], 5 MiB, 1, 2',
  '',
].join('\n');

/** The agent's query (`DEFAULT_QUERY_FIELDS`, `noheader,nounits`): GPUs 0 (34 °C) and 1 (35 °C). */
export const NVIDIA_CSV_NOHEADER = [
  '0, GPU-0a, 00000000:19:00.0, NVIDIA H100 80GB HBM3, 34, 71.20, 0, 0, 5, 16',
  '1, GPU-1b, 00000000:3B:00.0, NVIDIA H100 80GB HBM3, 35, 69.85, 2, 1, 5, 16',
  '',
].join('\n');

/** One GPU block of `nvidia-smi -q`. */
function qBlock(bus: string, uuid: string, temp: number): string[] {
  return [
    `GPU ${bus}`,
    '    Product Name                          : NVIDIA A100-SXM4-80GB',
    `    GPU UUID                              : ${uuid}`,
    '    PCI',
    `        Bus Id                            : ${bus}`,
    '        GPU Link Info',
    '            PCIe Generation',
    '                Max                       : 4',
    '                Current                   : 4',
    '            Link Width',
    '                Max                       : 16x',
    '                Current                   : 16x',
    '    ECC Errors',
    '        Volatile',
    '            SRAM Correctable              : 2',
    '            SRAM Uncorrectable            : 0',
    '            DRAM Correctable              : 3',
    '            DRAM Uncorrectable            : 1',
    '    Temperature',
    `        GPU Current Temp                  : ${temp} C`,
    '    GPU Power Readings',
    '        Power Draw                        : 61.50 W',
    '    Processes                             : None',
    '',
  ];
}

/** `nvidia-smi -q`: two GPUs (44 and 45 °C), ECC corrected 5 and uncorrected 1 each, link 4/16x. */
export const NVIDIA_Q = [
  '',
  '==============NVSMI LOG==============',
  '',
  'Timestamp                                 : Mon Jan  6 10:00:00 2025',
  'Driver Version                            : 550.54.15',
  'CUDA Version                              : 12.4',
  '',
  'Attached GPUs                             : 2',
  ...qBlock('00000000:19:00.0', 'GPU-1', 44),
  ...qBlock('00000000:3B:00.0', 'GPU-2', 45),
].join('\n');

/**
 * `nvidia-smi -q` of one A100 (block at line 8): 44 °C, 61.5 W, SRAM+DRAM volatile counters
 * summing to 5 corrected and 1 uncorrected, link gen 4 x8; driver 550.54.15.
 */
export const NVIDIA_Q_ONE_GPU = `
==============NVSMI LOG==============

Timestamp                                 : Mon Jan  6 10:00:00 2025
Driver Version                            : 550.54.15

Attached GPUs                             : 1
GPU 00000000:19:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    GPU UUID                              : GPU-1
    PCI
        Bus Id                            : 00000000:19:00.0
        GPU Link Info
            PCIe Generation
                Max                       : 4
                Current                   : 4
            Link Width
                Max                       : 16x
                Current                   : 8x
    ECC Errors
        Volatile
            SRAM Correctable              : 2
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 3
            DRAM Uncorrectable            : 1
    Temperature
        GPU Current Temp                  : 44 C
    GPU Power Readings
        Power Draw                        : 61.50 W
    Processes                             : None
`;

/** One `<gpu>` element of `nvidia-smi -q -x`. */
function xmlGpu(bus: string, temp: number): string[] {
  return [
    `  <gpu id="${bus}">`,
    '    <product_name>NVIDIA A&amp;B</product_name>',
    `    <uuid>GPU-${temp}</uuid>`,
    '    <pci><pci_gpu_link_info><pcie_gen><current_link_gen>4</current_link_gen></pcie_gen>',
    '      <link_widths><current_link_width>16x</current_link_width></link_widths></pci_gpu_link_info></pci>',
    '    <ecc_errors><volatile><single_bit><total>4</total></single_bit><double_bit><total>N/A</total></double_bit></volatile></ecc_errors>',
    `    <temperature><gpu_temp>${temp} C</gpu_temp></temperature>`,
    '    <gpu_power_readings><power_draw>67.03 W</power_draw></gpu_power_readings>',
    '    <!-- a comment -->',
    '    <empty/>',
    '  </gpu>',
  ];
}

/** `nvidia-smi -q -x`: two GPUs (27 and 28 °C), name `NVIDIA A&B`, ECC single-bit total 4. */
export const NVIDIA_XML = [
  '<?xml version="1.0" ?>',
  '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
  '<nvidia_smi_log>',
  '  <timestamp>Mon Jan  6 10:00:00 2025</timestamp>',
  '  <driver_version>535.54.03</driver_version>',
  '  <attached_gpus>2</attached_gpus>',
  ...xmlGpu('00000000:01:00.0', 27),
  ...xmlGpu('00000000:02:00.0', 28),
  '</nvidia_smi_log>',
  '',
].join('\n');

/** The default `nvidia-smi` table (525+ layout): GPUs 0 (49 °C, 114 W, ECC 0) and 1 (ERR! power, ECC 3). */
export const NVIDIA_TABLE = [
  'Mon Jan  6 10:00:00 2025',
  '+-----------------------------------------------------------------------------------------+',
  '| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |',
  '|-----------------------------------------+------------------------+----------------------+',
  '| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |',
  '| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |',
  '|=========================================+========================+======================|',
  '|   0  NVIDIA A100-SXM4-80GB          On  |   00000000:27:00.0 Off |                    0 |',
  '| N/A   49C    P0            114W /  400W |   72297MiB /  81920MiB |     11%      Default |',
  '+-----------------------------------------+------------------------+----------------------+',
  '|   1  NVIDIA A100-SXM4-80GB          On  |   00000000:2A:00.0 Off |                    3 |',
  '| N/A   51C    P0            ERR! /  400W |       3MiB /  81920MiB |      0%      Default |',
  '+-----------------------------------------+------------------------+----------------------+',
  '',
  '+-----------------------------------------------------------------------------------------+',
  '| Processes:                                                                              |',
  '|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |',
  '|=========================================================================================|',
  '|  No running processes found                                                             |',
  '+-----------------------------------------------------------------------------------------+',
  '',
].join('\n');

/**
 * A kernel log: Xid 13 on 0000:27:00.0 (dmesg -T), Xid 79 on 0000:2A:00.0 (ISO time after a
 * facility prefix) with its "fallen off the bus" echo (no second event), an inferred Xid 79
 * for 0000:B3:00.0 (the open driver's two-line message), and unrelated lines.
 */
export const KMSG = [
  '[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:27:00): 13, pid=1234, Graphics Exception',
  'kern  :warn  : 2025-01-21T02:21:33,498559+02:00 NVRM: Xid (PCI:0000:2a:00): 79, pid=1, GPU has fallen off the bus.',
  'kern  :err   : 2025-01-21T02:21:33,500000+02:00 NVRM: GPU 0000:2a:00.0: GPU has fallen off the bus.',
  '[ 1843.308145] eth0: link up',
  '[ 1900.000001] NVRM: The NVIDIA GPU 0000:b3:00.0',
  '               NVRM: (PCI ID: 10de:2330) installed in this system has',
  '               NVRM: fallen off the bus and is not responding to commands.',
  '',
].join('\n');

/** `hdc health -j`: a whole 910B envelope for node `hdc-node-1` with NPU 0 at 52 °C. */
export const HDC_ENVELOPE = JSON.stringify(
  {
    schema: 'hdc.health/v1',
    node: 'hdc-node-1',
    boot_id: 'boot-1',
    seq: 4,
    collected_at: '2026-03-01T12:00:00.000Z',
    collector: 'hdc',
    cached: false,
    payload: {
      family: '910B',
      npus: [
        {
          npu: 0,
          chip: 0,
          name: '910B3',
          health: 'OK',
          temp_c: 52,
          power_w: 98.5,
          aicore_pct: 10,
          hbm: { used_mb: 100, total_mb: 65536, temp_c: 40, ecc: { single_bit: 0, double_bit: 0 } },
          pcie: { bus_id: '0000:C1:00.0', link: 'up' },
          error_codes: [],
        },
      ],
    },
  },
  null,
  2,
);

/** One kernel-log line and the node problem it reports (kind and subject), or null for none. */
export interface NodeKernelSample {
  /** Where the format comes from (the kernel source, and where the line was seen). */
  source: string;
  line: string;
  expected: [kind: string, subject: string] | null;
}

/**
 * Node-problem messages of the kernel log in the layouts it prints them (dmesg, dmesg -T,
 * syslog), each with its source, and near misses that report nothing. Realistic: the lines
 * are as reported in the threads named, with host names, times and numbers kept.
 */
export const NODE_KERNEL_SAMPLES: readonly NodeKernelSample[] = [
  {
    source: 'kernel/hung_task.c; sonic-net/sonic-buildimage#4822 (a comm holding `:`)',
    line: '[24288.377534] INFO: task kworker/1:2:10762 blocked for more than 120 seconds.',
    expected: ['hung-task', 'kworker/1:2:10762'],
  },
  {
    source: 'kernel/hung_task.c; moby/moby#33012 (syslog)',
    line: 'May 09 15:18:40 bjsjs_110_46 kernel: INFO: task dockerd:14148 blocked for more than 120 seconds.',
    expected: ['hung-task', 'dockerd:14148'],
  },
  {
    source: 'kernel/hung_task.c: the line after it, which names nothing',
    line: '[26825.866477] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
    expected: null,
  },
  {
    source: 'kernel/watchdog.c, pr_fmt "watchdog: " (4.15+); madMAx43v3r/chia-plotter#535',
    line: '[405108.698255] watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [chia_plot:29632]',
    expected: ['soft-lockup', 'CPU#2'],
  },
  {
    source: 'kernel/watchdog.c, pr_fmt "NMI watchdog: " (4.x); openzfs/zfs#4536',
    line: 'NMI watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [SimpleCacheWork:8140]',
    expected: ['soft-lockup', 'CPU#2'],
  },
  {
    source: 'kernel/watchdog.c without a prefix (3.x); multipath-tcp/mptcp#99',
    line: '[2870707.887079] BUG: soft lockup - CPU#10 stuck for 23s! [migration/10:346]',
    expected: ['soft-lockup', 'CPU#10'],
  },
  {
    source: 'kernel/watchdog_hld.c',
    line: '[ 1234.567890] NMI watchdog: Watchdog detected hard LOCKUP on cpu 7',
    expected: ['soft-lockup', 'CPU#7'],
  },
  {
    source: 'mm/oom_kill.c __oom_kill_process (5.x/6.x: UID, pgtables, oom_score_adj)',
    line: '[Mon Dec  8 17:51:31 2025] Out of memory: Killed process 41234 (python3) total-vm:98765432kB, anon-rss:81234567kB, file-rss:1234kB, shmem-rss:0kB, UID:1000 pgtables:160000kB oom_score_adj:1000',
    expected: ['oom-kill', 'python3:41234'],
  },
  {
    source: 'mm/oom_kill.c oom_kill_process before 4.19; genular/pandora#49',
    line: 'May 07 21:43:54 doom kernel: Out of memory: Kill process 27438 (R) score 31 or sacrifice child',
    expected: ['oom-kill', 'R:27438'],
  },
  {
    source:
      'mm/oom_kill.c before 4.19: the second line of the same kill, not counted again; genular/pandora#49',
    line: 'May 07 21:43:54 doom kernel: Killed process 27438 (R) total-vm:38349780kB, anon-rss:1041924kB, file-rss:4kB, shmem-rss:0kB',
    expected: null,
  },
  {
    source: 'mm/oom_kill.c dump_header: the summary of the same kill, not counted again',
    line: 'oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/kubepods/burstable/pod1,task=python3,pid=41234,uid=1000',
    expected: null,
  },
  {
    source: 'mm/oom_kill.c out_of_memory with a memory cgroup (mem_cgroup_out_of_memory)',
    line: '[ 5021.112233] Memory cgroup out of memory: Killed process 5150 (stress) total-vm:1061676kB, anon-rss:1048832kB, file-rss:1408kB, shmem-rss:0kB, UID:0 pgtables:2120kB oom_score_adj:939',
    expected: ['cgroup-oom-kill', 'stress:5150'],
  },
  {
    source: 'mm/oom_kill.c with vm.oom_kill_allocating_task',
    line: 'Out of memory (oom_kill_allocating_task): Killed process 811 (java) total-vm:4471604kB, anon-rss:2097152kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4520kB oom_score_adj:0',
    expected: ['oom-kill', 'java:811'],
  },
  {
    source: 'fs/ext4/super.c __ext4_error; bit-team/backintime#2568',
    line: '[70098.185011] EXT4-fs error (device sdd1): ext4_journal_check_start:83: comm rsync: Detected aborted journal',
    expected: ['fs-error', 'sdd1'],
  },
  {
    source: 'fs/ext4/super.c __ext4_std_error; kubernetes/kubernetes#12905',
    line: '[7438185.621792] EXT4-fs error (device dm-4) in ext4_setattr:4562: Journal has aborted',
    expected: ['fs-error', 'dm-4'],
  },
  {
    source: 'fs/ext4/super.c: the rate limiter’s summary, not an error of its own; bit-team/backintime#2568',
    line: '[70102.562220] EXT4-fs error: 1267 callbacks suppressed',
    expected: null,
  },
  {
    source: 'fs/ext4/super.c ext4_handle_error; kubernetes/kubernetes#12905',
    line: '[7438185.635874] EXT4-fs (dm-4): Remounting filesystem read-only',
    expected: ['fs-readonly', 'dm-4'],
  },
  {
    source:
      'fs/ext4/super.c: a remount the administrator asked for (errors=remount-ro is an option), not a problem; hamonikr/hamonikr-system#13',
    line: 'EXT4-fs (nvme0n1p5): re-mounted. Opts: errors=remount-ro. Quota mode: none.',
    expected: null,
  },
  {
    source: 'fs/ext4/super.c ext4_msg: a warning, not an error',
    line: '[  296.444490] EXT4-fs warning (device dm-4): ext4_end_bio:343: I/O error 10 writing to inode 1182507 starting block 2920460)',
    expected: null,
  },
  {
    source: 'fs/jbd2/journal.c jbd2_journal_abort; coolsnowwolf/lede#6147',
    line: '[21628.545380] Aborting journal on device sdb1-8.',
    expected: ['fs-error', 'sdb1-8'],
  },
  {
    source: 'fs/xfs xfs_do_force_shutdown, 5.x text; a log I/O error on sdb1',
    line: '[145729.850569] XFS (sdb1): Log I/O Error (0x2) detected at xlog_ioend_work+0x6e/0x70 [xfs] (fs/xfs/xfs_log.c:1378).  Shutting down filesystem.',
    expected: ['fs-error', 'sdb1'],
  },
  {
    source: 'fs/xfs xfs_do_force_shutdown, 4.x text',
    line: '[   77.691772] XFS (dm-1): xfs_do_force_shutdown(0x8) called from line 985 of file fs/xfs/xfs_trans.c.  Return address = 0xffffffffc0d5335f',
    expected: ['fs-error', 'dm-1'],
  },
  {
    source: 'fs/xfs, 4.x text',
    line: '[    8.182008] XFS (dm-4): Corruption of in-memory data detected.  Shutting down filesystem',
    expected: ['fs-error', 'dm-4'],
  },
  {
    source: 'fs/xfs xfs_verifier_error',
    line: 'XFS (nvme0n1p1): Metadata corruption detected at xfs_dinode_verify+0xa4/0x5a0 [xfs], inode 0x2c0 dinode',
    expected: ['fs-error', 'nvme0n1p1'],
  },
  {
    source: 'fs/xfs: routine messages name the device too and are not errors',
    line: '[    8.100000] XFS (sda1): Ending clean mount',
    expected: null,
  },
  {
    source: 'arch/x86/kernel/cpu/mce/core.c __print_mce: status a6… has UC (bit 61) set; andikleen/mcelog#70',
    line: 'Sep 16 19:51:15 kernel: [    0.064265] mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: a600000000020408',
    expected: ['machine-check', 'CPU 0'],
  },
  {
    source:
      'arch/x86/kernel/cpu/mce/core.c __print_mce: status cc… is corrected (UC clear); home-assistant/operating-system#2989',
    line: 'Dec 13 13:46:08 homeassistant kernel: mce: [Hardware Error]: CPU 2: Machine Check: 0 Bank 6: cc59dec000041152',
    expected: null,
  },
  {
    source: 'arch/x86/kernel/cpu/mce/core.c __print_mce: an exception (MCG_STATUS.MCIP)',
    line: 'mce: [Hardware Error]: CPU 12: Machine Check Exception: 5 Bank 1: bd80000000100134',
    expected: ['machine-check', 'CPU 12'],
  },
  {
    source: 'arch/x86/kernel/cpu/mce/core.c mce_notify_irq: corrected errors logged, counted by EDAC',
    line: 'mce: [Hardware Error]: Machine check events logged',
    expected: null,
  },
  {
    source: 'arch/x86/kernel/cpu/mce/core.c kill_me_maybe',
    line: 'mce: Uncorrected hardware memory error in user-access at 3f8a1b2c00',
    expected: ['machine-check', '0x3f8a1b2c00'],
  },
  {
    source: 'mm/memory-failure.c action_result',
    line: '[86523.123456] Memory failure: 0x1a2b3c: recovery action for dirty LRU page: Recovered',
    expected: ['machine-check', '0x1a2b3c'],
  },
  {
    source:
      'mm/memory-failure.c: the signal to the task that used the page (the same failure, not counted twice)',
    line: 'Memory failure: 0x1a2b3c: Sending SIGBUS to python3:4242 due to hardware memory corruption',
    expected: null,
  },
  {
    source: 'drivers/firmware/efi/cper.c through drivers/acpi/apei/ghes.c',
    line: '{1}[Hardware Error]: event severity: recoverable',
    expected: ['machine-check', 'APEI'],
  },
  {
    source: 'drivers/firmware/efi/cper.c: a corrected error, counted by EDAC',
    line: '{2}[Hardware Error]: event severity: corrected',
    expected: null,
  },
  {
    source: 'kernel/hung_task.c: a comm naming another problem stays the hung task’s name',
    line: '3,14,1000,-;INFO: task soft lockup:4242 blocked for more than 122 seconds.',
    expected: ['hung-task', 'soft lockup:4242'],
  },
  {
    source: 'kernel/hung_task.c: a 15-byte comm holding `:` and digits',
    line: '3,15,1000,-;INFO: task Out of memory:4242 blocked for more than 122 seconds.',
    expected: ['hung-task', 'Out of memory:4242'],
  },
  {
    source: 'mm/oom_kill.c: a cgroup OOM whose victim is named like a node OOM',
    line: '3,16,1000,-;Memory cgroup out of memory: Killed process 4242 (Out of memory: ) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB',
    expected: ['cgroup-oom-kill', 'Out of memory: :4242'],
  },
  {
    source: 'EDAC: counted from sysfs by another check',
    line: 'EDAC MC1: 1 CE memory scrubbing error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0xee30a0 offset:0x0 grain:32 syndrome:0x0)',
    expected: null,
  },
];

/**
 * Lines a tenant can get printed by the kernel, as /dev/kmsg records of facility 0 (priority
 * < 8), each naming a process it controls; none reports a node problem (kmsg-node.ts).
 */
export const FORGED_NODE_KERNEL_RECORDS: readonly string[] = [
  // A comm of 15 bytes at the start of the kernel's own text.
  '6,10,1000,-;INFO: task a:1  invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0',
  '6,11,1000,-;Out of memory: [4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5e0c1a40 error 6 in a.out[401000+1000]',
  '6,12,1000,-;EXT4-fs error [4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5e0c1a40 error 6 in x[401000+1000]',
  '6,13,1000,-;Memory failure:[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5e0c1a40 error 6',
  // A file name the kernel prints later in its own line.
  "4,17,1000,-;process '/tmp/BUG: soft lockup - CPU#1 stuck for 22s! [x:1]' started with executable stack",
  '4,18,1000,-;a.out[4242]: segfault at 0 ip 0 sp 0 error 6 in EXT4-fs error (device sda1): x[401000+1000]',
  // Written from user space: facility 1 (user) and 3 (daemon).
  '11,19,1000,-;INFO: task python3:1234 blocked for more than 120 seconds.',
  '27,20,1000,-;EXT4-fs (sda1): Remounting filesystem read-only',
];
