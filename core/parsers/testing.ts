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
