import { describe, expect, it } from '@jest/globals';
import { parseNvidiaXml } from './query-xml.js';

const XML = `<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <timestamp>Mon Jan  6 10:00:00 2025</timestamp>
  <driver_version>535.54.03</driver_version>
  <attached_gpus>1</attached_gpus>
  <gpu id="00000000:01:00.0">
    <product_name>NVIDIA A&amp;B</product_name>
    <uuid>GPU-x</uuid>
    <pci><pci_gpu_link_info><pcie_gen><current_link_gen>4</current_link_gen></pcie_gen>
      <link_widths><current_link_width>16x</current_link_width></link_widths></pci_gpu_link_info></pci>
    <ecc_errors><volatile><single_bit><total>4</total></single_bit><double_bit><total>N/A</total></double_bit></volatile></ecc_errors>
    <temperature><gpu_temp>27 C</gpu_temp></temperature>
    <gpu_power_readings><power_draw>67.03 W</power_draw></gpu_power_readings>
    <empty/>
  </gpu>
</nvidia_smi_log>
`;

describe('parseNvidiaXml (-q -x)', () => {
  it('reads the fields, entities, single/double bit totals', () => {
    const { payload } = parseNvidiaXml(XML);
    expect(payload.gpus[0]).toMatchObject({
      bus_id: '0000:01:00.0',
      name: 'NVIDIA A&B',
      uuid: 'GPU-x',
      pcie_link_gen: 4,
      pcie_link_width: 16,
      ecc_corrected_volatile: 4,
      ecc_uncorrected_volatile: null,
      temperature_gpu: 27,
      power_draw_w: 67.03,
    });
  });

  it('a truncated document is an error naming where the open element began', () => {
    const cut = XML.split('\n').slice(0, 10).join('\n');
    expect(() => parseNvidiaXml(cut)).toThrow(
      /XML ends inside <pci_gpu_link_info> opened at line 10: the output is truncated/,
    );
  });

  it('a mismatched closing tag names its line', () => {
    expect(() => parseNvidiaXml('<nvidia_smi_log>\n<gpu id="0:1:0.0">\n</pci>\n</nvidia_smi_log>')).toThrow(
      /^line 3: XML: <\/pci> closes <gpu>$/,
    );
  });
});
